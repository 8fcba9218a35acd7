"""Templates for the prose of product pages: bullet points, descriptions and reviews.

Fillers never contain an attribute phrase from :mod:`.vocab` (``tests/web/test_web_catalogue.py`` checks
this), because WebShop's reward also counts a goal attribute as matched when it appears in the title,
bullets or description: a filler that said "easy to use" would hand that attribute to every product.
"""

from __future__ import annotations

#: Bullet text after an attribute heading ("SULFATE FREE: ..."); ``{noun}`` is the product noun.
BENEFITS = (
    "designed for people who care about the details of their {noun}",
    "tested in our own workshop so every {noun} meets the same standard",
    "a thoughtful choice that fits right into your routine",
    "made to feel right from the first day you use this {noun}",
    "our customers asked for it, so we built it into every {noun}",
    "one of the reasons shoppers keep coming back to this {noun}",
    "a small change that makes a noticeable difference",
    "crafted with care and checked twice before shipping",
)

#: Closing bullets that name no attribute.
EXTRA_BULLETS = (
    "WHAT YOU GET: one {noun}, a quick start card and our friendly customer support",
    "SATISFACTION PROMISE: if your {noun} is not right for you, contact us for a replacement or refund",
    "THOUGHTFUL PACKAGING: ships in a recyclable box that protects your {noun} in transit",
    "PERFECT PRESENT: a welcome surprise for birthdays, holidays and housewarmings",
)

#: Description sentences; ``{brand}``, ``{noun}`` and ``{attrs}`` (an attribute list in words) are filled in.
OPENERS = (
    "Meet the {brand} {noun}: {attrs}.",
    "The {brand} {noun} is {attrs}.",
    "Looking for a {noun} that is {attrs}? The {brand} {noun} has you covered.",
    "{brand} makes this {noun} to be {attrs}.",
)
MIDDLES = (
    "Every detail has been considered, from the first look to the last use.",
    "It arrives ready for the everyday moments that matter to you.",
    "Our team spent months refining the design before it reached the shelf.",
    "Thousands of shoppers have made it part of their routine.",
    "It pairs well with the rest of the {brand} collection.",
    "We stand behind the quality of every piece that leaves our warehouse.",
)
CLOSERS = (
    "Order yours today and see the difference.",
    "Add it to your cart and enjoy.",
    "A dependable pick at a fair price.",
    "Questions? Our support team answers within one business day.",
)

#: Reviews by star rating: (title, body) pairs; ``{noun}`` is filled in.
REVIEWS: dict[int, tuple[tuple[str, str], ...]] = {
    5: (("Love it!", "Exactly what I wanted. This {noun} exceeded my expectations."),
        ("Highly recommend", "Great value and it arrived quickly. Would buy this {noun} again."),
        ("Perfect", "My second {noun} from this seller and just as good as the first.")),
    4: (("Very good", "Does the job well. Packaging could be better but the {noun} is great."),
        ("Happy with it", "Nice {noun} for the price, a small flaw but nothing serious.")),
    3: (("It's okay", "The {noun} is fine, nothing special. It matches the photos."),
        ("Average", "Not bad, not great. I expected a little more from this {noun}.")),
    2: (("Disappointed", "The {noun} looked different from the pictures and felt cheap."),),
    1: (("Would not buy again", "Mine arrived damaged and the {noun} stopped working after a week."),),
}
