"""Web shop: a WebShop-compatible shop with its tasks and reward, in text and real-browser modes.

WebShop (Yao et al., 2022) needs Java, a spaCy model and 1.18M downloaded products; this family generates
its catalogue, searches it with ``bm25s`` and serves it from a local web server, offline. The layers, each
its own module:

* :mod:`.vocab` categories, types, attributes and options; :mod:`.prose` page text templates;
* :mod:`.catalogue` the deterministic product generator; :mod:`.cache` its on-disk cache;
* :mod:`.search` BM25 product search; :mod:`.tasks` goals, weights and splits;
* :mod:`.fuzzy` and :mod:`.reward` WebShop's reward; :mod:`.shop` the page model; :mod:`.actions` the grammar;
* :mod:`.text_view` WebShop's text observations; :mod:`.html_view` the HTML pages and URLs;
* :mod:`.server` the threaded local web server; :mod:`.browser` Chromium through Selenium;
* :mod:`.expert` the scripted expert and the rule baseline; :mod:`.env` the env; :mod:`.register` the ids.
"""
