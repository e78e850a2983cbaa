"""The course in other languages, from one source (``docs/translation.py`` is its command
line; ``docs/README.md``, "Languages", says how to use it).

- :mod:`i18n.sources`: the editions, and the English documents to translate;
- :mod:`i18n.markdown`: Markdown cut into messages and joined back, anchors;
- :mod:`i18n.checks`: what a translation must keep;
- :mod:`i18n.catalogues`: the ``.po`` catalogues: update, check, worksheets;
- :mod:`i18n.edition`: the translated notebooks, sources page and README.
"""
