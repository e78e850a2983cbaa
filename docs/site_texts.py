"""The website's own texts, in English: the "About this chapter" box, the home page's, the
widget notes, the reference pages' (``docs/build_site.py`` fills them in). Each is one message
of the ``site`` catalogue (``docs/locales/<language>/site.po``), so every language's pages say
them in that language; a text in braces is filled in when a page is made."""

from __future__ import annotations

TEXTS: dict[str, str] = {
    "about": """\
:::{{admonition}} About this chapter
:class: tip

**Reading time**: about {minutes} minutes, plus about {exercise_minutes} for the exercises.
**Run this chapter**: [on Binder]({binder}) (in your browser, nothing to install), or on your
machine with `uv run jupyter lab {notebook}` (see the [set-up](../index.md#{setup})). This page
shows the outputs stored in the notebook; run it to change the code and see what breaks.

**What this chapter adds to `harness`**, read from the code (each plugin lists the loop points
it overrides; see chapter 01 for what they are):
""",
    "adds_head": "| module | lines of code | plugs into the loop at | what it is |",
    "adds_foot": "{modules} modules, {lines} lines of code (blanks and comments not counted).",
    "adds_defines": "defines them:",
    "adds_tools": "tools the model calls:",
    "adds_none": "none of its own",
    "widget_state": "In Jupyter this is a live widget. Its state when the notebook was run:",
    "widget_no_state": (
        "In Jupyter this cell works with a live widget (or waits for one), so no output "
        "is stored for it."
    ),
    "widget_shot": (
        "How it looks in JupyterLab (a screenshot from the browser test, after Run All):"
    ),
    "widget_shot_alt": "The widget in JupyterLab",
    "widget_run": "A static page cannot run it: [run this chapter]({binder}) to use it.",
    "home_title": "# Build an agent harness",
    "home_chapters": """\
## Chapters

Each chapter is one notebook: read it here, or run it (each chapter's page has a Binder link
and says how to run it on your machine). Reading times are the chapters' own, measured; all
together about {reading}, and about {practice} of exercises (estimated: see the
sources page). The last three columns are read from the
code of `harness` when this site was built: the modules the chapter adds (exercise checks
left out), their lines of code, and the loop points its plugins use (chapter 01 defines
them). Each chapter's page lists its modules one by one.
""",
    "home_table_head": (
        "| # | chapter | reading time | exercises | modules | lines of code "
        "| plugs into the loop at |"
    ),
    "home_sources": """\
Where every documented and observed number comes from, with its public address and the date
it was checked: [the sources page]({sources}).

The whole package, module by module, with its docstrings: [the reference](reference/index.md).
""",
    "hours": "{hours} h {minutes:02d} min",
    "minutes": "{minutes} min",
    "toc_chapters": "Chapters",
    "toc_sources": "Sources",
    "toc_reference": "Reference",
    "reference_intro": """\
# The package, module by module

Every module of `harness`, in the order the chapters build it, with its docstrings: the code
the chapters show, as a reference to read and copy from. (The exercise checks are left out:
their hints are in the chapters.)
""",
    "reference_chapter": "## Chapter {number}",
    "module_built": "Built in chapter {chapter} · ``{path}`` · {lines} lines of code",
}
