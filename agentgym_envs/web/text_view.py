"""WebShop's text observations of a :class:`~agentgym_envs.web.shop.Page`, rendered in-process.

* ``text``: the visible texts joined with ``" [SEP] "`` (WebShop's ``observation_mode="text"``).
* ``text_rich``: one line per text, buttons as ``[button] X [button_]``, option values indented and
  ``[clicked button] … [clicked button_]`` once chosen (with "You have clicked X." lines on top), product
  links on their own paragraph and "clicked" once opened this episode (``observation_mode="text_rich"``).

>>> from .shop import Element, Location, Page
>>> page = Page(Location(), (Element("text", "WebShop"), Element("search", "Search")))
>>> render_text(page)
'WebShop [SEP] Search'
>>> render_rich(page)
'WebShop\\n[button] Search [button_]\\n'
"""

from __future__ import annotations

from .shop import Element, Page

SEP = " [SEP] "


def render_text(page: Page) -> str:
    return SEP.join(e.text for e in page.elements)


def render_rich(page: Page) -> str:
    clicked = [e.text for e in page.elements if e.kind == "option" and e.selected]
    header = "".join(f"You have clicked {text}.\n" for text in reversed(clicked))
    return header + "".join(_rich(e, page) + "\n" for e in page.elements)


def _rich(element: Element, page: Page) -> str:
    if element.kind in ("button", "search"):
        return f"[button] {element.text} [button_]"
    if element.kind == "option":
        return f"  {_button(element.text, element.selected)}"
    if element.kind == "product":
        return "\n" + _button(element.text, element.text in page.visited)
    return element.text


def _button(text: str, clicked: bool) -> str:
    return f"[clicked button] {text} [clicked button_]" if clicked else f"[button] {text} [button_]"


RENDERERS = {"text": render_text, "text_rich": render_rich}
