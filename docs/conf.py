"""Sphinx's settings for the course's website. Build with ``docs/build_site.py``, not by hand: it
prepares the source tree (``build/site-src``) this configuration reads."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import importlib  # noqa: E402
import re  # noqa: E402

from build_site import reference_modules, repository  # noqa: E402  (beside this file)
from translation import EDITIONS, glossary  # noqa: E402  (beside this file)

# Import the package before Sphinx starts its worker processes: each worker then finds every
# module already imported. (Imported first inside a worker, pydantic's BaseModel fails to
# build its schema under Sphinx 9's parallel autodoc; in one process it works either way.)
for _name in reference_modules():
    importlib.import_module(_name)

project = "Build an agent harness"
author = "the harness-course authors"
copyright = "the harness-course authors"

extensions = [
    "myst_nb",  # notebooks and Markdown pages (it brings myst_parser with it)
    "sphinx.ext.autodoc",  # the reference pages, from the package's docstrings
]

# The notebooks are committed executed: the site shows their stored outputs and runs nothing.
nb_execution_mode = "off"
nb_output_stderr = "show"
nb_merge_streams = True
# Markdown outputs are MyST: the pages' own notes (a widget's stored state) use its directives.
nb_render_markdown_format = "myst"
# Markdown the chapters use; no dollarmath, so prices like $3 and $15 stay text.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The package's docstrings are reStructuredText (``code``, :func:`refs`): single backquotes
# read as code too, as a reader of the source would take them.
default_role = "code"
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True  # show defaults as written, never a value from this machine
add_module_names = False

exclude_patterns = ["README.md", "**/.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]  # a notebook's first heading is its title: that is fine

# Languages: `docs/build_site.py` builds English into build/site/ and each translation into
# build/site/<language>/ with `-D language=<language>`. The pages come translated already (from
# the catalogues in docs/locales/<language>/, by docs/translation.py, the same ones the Chinese
# notebooks are made from); Sphinx's language setting translates its own words and the theme's
# (search, previous, next, the menus), marks the page's language and picks the search's word
# splitting. Our catalogues are not in a LC_MESSAGES folder, so Sphinx never applies them twice.
language = "en"
locale_dirs: list[str] = []
gettext_compact = False
gettext_uuid = False
templates_path = [str(DOCS / "templates")]


def search_words() -> str:
    """A word list for the Chinese search's word splitter (jieba): the glossary's Chinese terms,
    so 微压缩 or 提示缓存 is one word in the index, as a reader types it (jieba alone cuts
    微压缩 into 微 and 压缩, and the search page never cuts what the reader types)."""
    words = set()
    for term in glossary("zh_CN"):
        for word in re.split(r"[/、，,（(]", term.chinese):
            word = word.strip()
            if re.search(r"[\u4e00-\u9fff]", word) and " " not in word:
                words.add(word)
    path = DOCS.parent / "build" / "search-words-zh_CN.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{w} 100000\n" for w in sorted(words)), encoding="utf-8")
    return str(path)


html_search_options = {"dict": search_words()}
html_context = {
    "site_languages": [("en", "English")] + [(code, e.name) for code, e in EDITIONS.items()],
}

owner, _, name = repository().partition("/")
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = [str(DOCS / "static")]
html_css_files = ["site.css"]
html_show_sourcelink = False
html_copy_source = False  # the notebooks are in the repository; the pages need not carry them
html_last_updated_fmt = None
# The theme's sidebar, with the language switch above the chapters.
html_sidebars = {
    "**": [
        "navbar-logo.html",
        "icon-links.html",
        "search-button-field.html",
        "language-switch.html",
        "sbt-sidebar-nav.html",
    ]
}
html_theme_options = {
    "repository_url": f"https://github.com/{owner}/{name}",
    "repository_branch": "HEAD",
    "path_to_docs": "",
    "use_repository_button": True,
    "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    "show_toc_level": 2,
    "navigation_with_keys": False,
}


def setup(app: object) -> None:
    """Sphinx 9.0's Chinese search ends its ``language_data.js`` with ``window.Stemmer =
    ChineseStemmer``, a class it never defines, so the search page finds nothing
    (sphinx-doc/sphinx#14229; fixed in Sphinx 9.1, which needs Python 3.12). Its Chinese search
    stems the Latin words with the English stemmer: name that one, as the fix does."""
    import sphinx
    from sphinx.search.zh import SearchChinese

    if sphinx.version_info[:2] >= (9, 1):
        return

    class SearchChineseStemmedInEnglish(SearchChinese):
        language_name = "English"

    app.add_search_language(SearchChineseStemmedInEnglish)  # type: ignore[attr-defined]
