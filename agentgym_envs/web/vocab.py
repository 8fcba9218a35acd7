"""The shop's static vocabulary: categories, product types, attributes, option values and brands.

WebShop scraped five Amazon categories (beauty, food, fashion, furniture, electronics); the catalogue
generator draws products from the same five, each with an Amazon-like category tree, a pool of
WebShop-style attributes ("sulfate free", "machine wash", "easy assembly"), and option vocabularies
(sizes, colours, flavours, scents). Product types are chosen so that search is not trivial: several types
share words across categories ("coffee beans" / "coffee table" / "coffee mug", "running shoes" /
"shoe rack", "laptop bag" / "laptop stand", "bath bombs" / "bath towel set").

Everything here is data; nothing is random. Changing it changes every task, so treat it as versioned
(bump :data:`VOCAB_VERSION`).
"""

from __future__ import annotations

from dataclasses import dataclass

VOCAB_VERSION = 1


@dataclass(frozen=True)
class ProductType:
    """One kind of product: WebShop's ``query`` (the search it was scraped with) and what titles say."""

    query: str
    path: tuple[str, ...]
    """Category path below the top-level root, most general first."""
    nouns: tuple[str, ...]
    """The head noun phrase's nouns (what spaCy would tag NOUN); used for WebShop's type reward."""
    attributes: tuple[str, ...]
    """Type-specific attributes, drawn together with the category's shared pool."""
    options: tuple[tuple[str, str], ...]
    """``(option name, vocabulary key in OPTION_VALUES)`` pairs."""
    price: tuple[float, float]
    audiences: tuple[str, ...] = ()
    """Optional "for X" phrases in titles ("for Men", "for Dry Hair")."""


@dataclass(frozen=True)
class Category:
    name: str
    """WebShop's short category name (``beauty``, ``food``, …)."""
    root: str
    """The top-level node of the category tree ("Beauty & Personal Care")."""
    attributes: tuple[str, ...]
    types: tuple[ProductType, ...]


def _t(query: str, path: str, nouns: str, attributes: str, options: str, price: tuple[float, float],
       audiences: str = "") -> ProductType:
    """Compact constructor: ``path`` is ``>``-separated, lists are ``,``-separated, options ``name=key``."""
    split = lambda s: tuple(x.strip() for x in s.split(",") if x.strip())  # noqa: E731
    opts = tuple(tuple(o.split("=")) for o in split(options))
    return ProductType(query, tuple(p.strip() for p in path.split(">")), split(nouns), split(attributes),
                       opts, price, split(audiences))


BEAUTY = Category("beauty", "Beauty & Personal Care", (
    "paraben free", "cruelty free", "long lasting", "easy to use", "travel size", "natural ingredients",
    "dermatologist tested", "fragrance free", "sensitive skin", "high quality", "alcohol free", "vegan",
    "non toxic", "easy to carry",
), (
    _t("shampoo", "Hair Care > Shampoo & Conditioner > Shampoos", "shampoo",
       "sulfate free, dry hair, damaged hair, hair growth, color safe, argan oil", "size=volume, scent=scent",
       (6, 38), "Dry Hair, Curly Hair, Men, Women"),
    _t("conditioner", "Hair Care > Shampoo & Conditioner > Conditioners", "conditioner",
       "sulfate free, dry hair, damaged hair, color safe, argan oil, leave in", "size=volume, scent=scent",
       (6, 36), "Dry Hair, Curly Hair, Women"),
    _t("hair dryer", "Hair Care > Styling Tools & Appliances > Hair Dryers", "hair, dryer",
       "fast drying, low noise, ionic technology, hair salon, lightweight design", "color=color_basic",
       (19, 140), "Travel, Women"),
    _t("lipstick", "Makeup > Lips > Lipstick", "lipstick",
       "matte finish, moisturizing formula, highly pigmented, smudge proof", "color=shade",
       (5, 30), "Women, Girls"),
    _t("eyeshadow palette", "Makeup > Eyes > Eyeshadow", "eyeshadow, palette",
       "highly pigmented, shimmer finish, matte finish, blendable formula", "color=palette",
       (7, 45), "Women"),
    _t("face moisturizer", "Skin Care > Face > Creams & Moisturizers", "face, moisturizer",
       "dry skin, anti aging, fine lines, oily skin, hyaluronic acid, spf 30", "size=volume",
       (9, 60), "Men, Women, Sensitive Skin"),
    _t("nail polish", "Foot, Hand & Nail Care > Nail Art & Polish > Nail Polish", "nail, polish",
       "quick dry, chip resistant, high gloss, gel polish", "color=shade, size=count",
       (4, 25), "Women, Girls"),
    _t("body wash", "Personal Care > Bath & Bathing Accessories > Body Washes", "body, wash",
       "dry skin, shea butter, moisturizing formula, tea tree oil", "size=volume, scent=scent",
       (5, 28), "Men, Women"),
    _t("deodorant", "Personal Care > Deodorants & Antiperspirants > Deodorant", "deodorant",
       "aluminum free, 48 hour protection, baking soda free", "size=weight, scent=scent",
       (4, 22), "Men, Women"),
    _t("bath bombs", "Personal Care > Bath & Bathing Accessories > Bath Bombs", "bath, bombs",
       "essential oils, gift set, shea butter, handmade", "scent=scent, size=count",
       (8, 35), "Women, Kids"),
))

FOOD = Category("food", "Grocery & Gourmet Food", (
    "gluten free", "non gmo", "sugar free", "low carb", "keto friendly", "high protein", "usda organic",
    "kosher certified", "dairy free", "low calorie", "plant based", "individually wrapped",
    "no artificial flavors", "great gift", "soy free",
), (
    _t("coffee beans", "Beverages > Coffee, Tea & Cocoa > Coffee > Whole Coffee Beans", "coffee, beans",
       "single origin, fair trade, freshly roasted, 100% arabica", "flavor=roast, size=weight", (8, 45)),
    _t("green tea", "Beverages > Coffee, Tea & Cocoa > Tea > Green Tea", "tea",
       "caffeine free, antioxidant rich, loose leaf, tea bags", "flavor=tea, size=count", (4, 30)),
    _t("protein bars", "Snack Foods > Bars > Protein Bars", "protein, bars",
       "low sugar, whole grain, meal replacement, 20g protein", "flavor=snack, size=count", (12, 48)),
    _t("potato chips", "Snack Foods > Chips & Crisps > Potato Chips", "potato, chips",
       "kettle cooked, family size, baked not fried, small batch", "flavor=chips, size=weight", (3, 30)),
    _t("dark chocolate", "Candy & Chocolate > Chocolate > Chocolate Bars", "chocolate",
       "fair trade, 70% cacao, low sugar, single origin", "flavor=chocolate, size=count", (5, 40)),
    _t("beef jerky", "Meat & Seafood > Jerky", "beef, jerky",
       "grass fed, high protein, ready to eat, no added nitrates", "flavor=jerky, size=weight", (7, 40)),
    _t("olive oil", "Pantry Staples > Cooking & Baking > Oils > Olive Oil", "olive, oil",
       "extra virgin, cold pressed, first cold press, glass bottle", "size=volume", (9, 55)),
    _t("sparkling water", "Beverages > Bottled Beverages, Water & Drink Mixes > Sparkling Water", "water",
       "zero calories, naturally flavored, caffeine free, no sodium", "flavor=water, size=count", (6, 32)),
    _t("honey", "Pantry Staples > Jams, Jellies & Sweet Spreads > Honey", "honey",
       "raw unfiltered, pure natural, locally sourced, glass jar", "size=weight", (7, 38)),
    _t("gift basket", "Food & Beverage Gifts > Gift Baskets", "gift, basket",
       "gift box, assorted snacks, holiday gift, birthday gift", "size=count", (25, 95), "Men, Women, Families"),
))

FASHION = Category("fashion", "Clothing, Shoes & Jewelry", (
    "machine wash", "hand wash", "slim fit", "relaxed fit", "moisture wicking", "quick drying", "breathable",
    "water resistant", "classic fit", "daily wear", "polyester spandex", "cotton spandex", "zipper closure",
), (
    _t("running shoes", "Men > Shoes > Athletic > Running", "shoes",
       "non slip, rubber sole, lace up, arch support, memory foam, lightweight design", "color=color_basic, size=shoe",
       (29, 130), "Men, Women"),
    _t("t-shirt", "Men > Clothing > Shirts > T-Shirts", "shirt",
       "short sleeve, long sleeve, crew neck, button closure", "color=color_basic, size=apparel", (8, 35),
       "Men, Women"),
    _t("hoodie", "Women > Clothing > Fashion Hoodies & Sweatshirts", "hoodie",
       "long sleeve, drawstring closure, fleece lined, kangaroo pocket", "color=color_basic, size=apparel",
       (18, 60), "Men, Women"),
    _t("yoga pants", "Women > Clothing > Active > Leggings", "yoga, pants",
       "high waist, tummy control, elastic waist, side pockets", "color=color_basic, size=apparel", (14, 48),
       "Women"),
    _t("jeans", "Men > Clothing > Jeans", "jeans",
       "button closure, stretch denim, straight leg, five pocket", "color=denim, size=waist", (20, 80), "Men, Women"),
    _t("dress", "Women > Clothing > Dresses > Casual", "dress",
       "short sleeve, v neck, elastic waist, side pockets", "color=color_basic, size=apparel", (18, 70), "Women"),
    _t("winter boots", "Women > Shoes > Boots > Snow Boots", "boots",
       "faux fur, rubber sole, non slip, ankle strap", "color=color_basic, size=shoe", (35, 140), "Women, Men"),
    _t("backpack", "Luggage & Travel Gear > Backpacks > Casual Daypacks", "backpack",
       "laptop compartment, padded straps, large capacity, usb charging port", "color=color_basic",
       (19, 90), "Travel, School, Men, Women"),
    _t("laptop bag", "Luggage & Travel Gear > Laptop Bags", "laptop, bag",
       "laptop compartment, shoulder strap, padded straps, large capacity", "color=color_basic, size=screen",
       (18, 75), "Men, Women"),
    _t("socks", "Men > Clothing > Socks > Athletic Socks", "socks",
       "arch support, cushioned sole, ankle length, crew length", "color=color_basic, size=sock", (9, 30),
       "Men, Women"),
))

FURNITURE = Category("furniture", "Home & Kitchen", (
    "easy assembly", "easy clean", "space saving", "solid wood", "living room", "bedroom", "storage space",
    "mid century", "steel frame", "heavy duty", "assembly required", "eco friendly", "home office",
), (
    _t("coffee table", "Furniture > Living Room Furniture > Tables > Coffee Tables", "coffee, table",
       "lift top, tempered glass, metal legs, storage shelf", "color=wood, size=table", (55, 280)),
    _t("office chair", "Furniture > Home Office Furniture > Home Office Chairs", "office, chair",
       "lumbar support, height adjustable, pu leather, swivel wheels", "color=color_basic", (60, 320)),
    _t("bookshelf", "Furniture > Living Room Furniture > Bookcases", "bookshelf",
       "open shelves, anti tip, industrial style, engineered wood", "color=wood, size=shelves", (35, 220)),
    _t("shoe rack", "Storage & Organization > Clothing & Closet Storage > Shoe Organizers", "shoe, rack",
       "entryway storage, stackable design, metal frame, non woven fabric", "color=color_basic, size=tiers",
       (15, 80)),
    _t("nightstand", "Furniture > Bedroom Furniture > Nightstands", "nightstand",
       "charging station, drawer storage, engineered wood, open shelves", "color=wood, size=set", (30, 160)),
    _t("bar stools", "Furniture > Game & Recreation Room Furniture > Home Bar Furniture > Barstools", "bar, stools",
       "swivel seat, height adjustable, pu leather, footrest", "color=color_basic, size=set", (60, 260)),
    _t("desk lamp", "Lighting & Ceiling Fans > Lamps & Shades > Desk Lamps", "desk, lamp",
       "led light, dimmable, eye caring, usb charging port", "color=color_basic", (15, 70)),
    _t("computer desk", "Furniture > Home Office Furniture > Home Office Desks", "computer, desk",
       "writing desk, metal legs, cable management, storage shelf", "color=wood, size=table", (60, 300)),
    _t("bath towel set", "Bath > Towels > Bath Towels", "bath, towel, set",
       "100% cotton, highly absorbent, quick drying, soft touch", "color=color_basic, size=set", (18, 75)),
    _t("throw pillow covers", "Home Décor Products > Decorative Pillows > Throw Pillow Covers", "pillow, covers",
       "invisible zipper, double sided, soft touch, machine washable", "color=color_basic, size=pillow", (9, 35)),
    _t("coffee mug", "Kitchen & Dining > Dining & Entertaining > Mugs", "coffee, mug",
       "dishwasher safe, microwave safe, lead free, large capacity", "color=color_basic, size=set", (9, 40)),
))

ELECTRONICS = Category("electronics", "Electronics", (
    "high definition", "fast charging", "long battery life", "water resistant", "easy install",
    "plug and play", "high speed", "ultra thin", "heavy duty", "aluminum alloy", "easy to use", "compact size",
), (
    _t("wireless earbuds", "Headphones, Earbuds & Accessories > Earbud Headphones", "earbuds",
       "noise cancelling, bluetooth 5.0, touch control, stereo sound, charging case", "color=color_basic",
       (19, 150)),
    _t("phone case", "Cell Phones & Accessories > Cases, Holsters & Sleeves > Basic Cases", "phone, case",
       "shockproof, wireless charging, slim fit, raised edges", "color=color_basic, size=phone", (8, 35)),
    _t("usb c cable", "Computers & Accessories > Computer Cables > USB Cables", "usb, cable",
       "fast charging, braided nylon, data transfer, usb c", "color=color_basic, size=length", (6, 25)),
    _t("bluetooth speaker", "Portable Audio & Video > Portable Speakers & Docks > Bluetooth Speakers",
       "bluetooth, speaker", "stereo sound, deep bass, bluetooth 5.0, hands free", "color=color_basic", (19, 160)),
    _t("laptop stand", "Computers & Accessories > Laptop Accessories > Stands", "laptop, stand",
       "height adjustable, foldable design, ventilated design, non slip", "color=color_basic", (15, 60)),
    _t("security camera", "Camera & Photo > Video Surveillance > Surveillance Cameras", "security, camera",
       "night vision, motion detection, two way audio, 1080p hd", "size=pack", (25, 180)),
    _t("portable charger", "Cell Phones & Accessories > Chargers & Power Adapters > Power Banks", "charger",
       "usb c, dual output, led display, wireless charging", "color=color_basic, size=capacity", (15, 70)),
    _t("tv mount", "Television & Video > Accessories > TV Mounts", "tv, mount",
       "full motion, tilt swivel, stud mount, cable management", "size=tv", (19, 110)),
    _t("screen protector", "Cell Phones & Accessories > Screen Protectors", "screen, protector",
       "tempered glass, bubble free, case friendly, 9h hardness", "size=phone", (5, 20)),
    _t("wireless keyboard", "Computers & Accessories > Computer Accessories > Keyboards", "keyboard",
       "quiet keys, rechargeable battery, backlit keys, bluetooth 5.0", "color=color_basic", (19, 110)),
))

CATEGORIES: tuple[Category, ...] = (BEAUTY, FOOD, FASHION, FURNITURE, ELECTRONICS)

#: Option vocabularies by key. Values are lowercase with ``/`` replaced by `` | `` (WebShop's loader does this).
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "color_basic": ("black", "white", "grey", "navy blue", "red", "pink", "green", "beige", "brown", "light blue",
                    "purple", "yellow", "orange", "khaki", "burgundy", "dark grey"),
    "shade": ("ruby red", "nude pink", "coral", "berry", "mauve", "classic red", "plum", "peach"),
    "palette": ("warm neutrals", "cool tones", "smoky eyes", "rose gold", "sunset", "mermaid"),
    "denim": ("dark wash", "light wash", "medium wash", "black", "stone wash", "indigo"),
    "wood": ("walnut", "espresso", "rustic brown", "white oak", "black", "grey wash", "natural"),
    "scent": ("lavender", "unscented", "coconut", "citrus", "eucalyptus mint", "vanilla", "tea tree", "ocean breeze"),
    "roast": ("medium roast", "dark roast", "light roast", "french vanilla", "hazelnut", "decaf"),
    "tea": ("jasmine", "peppermint", "lemon ginger", "matcha", "earl grey", "chamomile"),
    "snack": ("chocolate peanut butter", "cookies & cream", "salted caramel", "birthday cake", "mint chip",
              "blueberry"),
    "chips": ("sea salt", "barbecue", "sour cream & onion", "salt & vinegar", "jalapeno", "original"),
    "chocolate": ("sea salt almond", "mint", "orange", "raspberry", "espresso bean", "pure dark"),
    "jerky": ("original", "teriyaki", "peppered", "sweet & hot", "smoked", "hickory"),
    "water": ("lime", "grapefruit", "black cherry", "lemon", "mango", "pure"),
    "volume": ("3.4 fl oz (pack of 1)", "8 fl oz (pack of 1)", "16.9 fl oz (pack of 1)", "8 fl oz (pack of 2)",
               "33.8 fl oz (pack of 1)", "12 fl oz (pack of 3)"),
    "weight": ("2.6 ounce (pack of 1)", "12 ounce (pack of 1)", "1 pound (pack of 1)", "2 pound (pack of 1)",
               "5 ounce (pack of 6)", "2.5 ounce (pack of 12)"),
    "count": ("6 count (pack of 1)", "12 count (pack of 1)", "24 count (pack of 1)", "6 count (pack of 2)",
              "20 count (pack of 3)", "48 count (pack of 1)"),
    "apparel": ("x-small", "small", "medium", "large", "x-large", "xx-large"),
    "shoe": ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12"),
    "waist": ("28w x 30l", "30w x 30l", "32w x 32l", "34w x 32l", "36w x 34l", "38w x 32l"),
    "sock": ("small | medium", "large | x-large", "6 pairs", "12 pairs"),
    "screen": ("13 inch", "14 inch", "15.6 inch", "17 inch"),
    "table": ("39.4 inch", "43.3 inch", "47.2 inch", "55.1 inch", "63 inch"),
    "shelves": ("3-tier", "4-tier", "5-tier", "6-tier"),
    "tiers": ("2 tiers", "3 tiers", "4 tiers", "5 tiers", "10 tiers"),
    "set": ("set of 1", "set of 2", "set of 3", "set of 4", "set of 6"),
    "pillow": ("16 x 16 inch", "18 x 18 inch", "20 x 20 inch", "12 x 20 inch", "24 x 24 inch"),
    "phone": ("iphone 13", "iphone 14 pro", "iphone 15", "galaxy s23", "galaxy s24 ultra", "pixel 8"),
    "length": ("1 ft", "3.3 ft", "6.6 ft", "10 ft", "6.6 ft (2 pack)", "3.3 ft (3 pack)"),
    "pack": ("1 pack", "2 pack", "4 pack"),
    "capacity": ("5000mah", "10000mah", "20000mah", "26800mah"),
    "tv": ("26-55 inch", "32-65 inch", "42-70 inch", "50-85 inch"),
}

#: Syllables that make brand names ("Lumora", "Brightwell"); brands are proper nouns for the type reward.
BRAND_HEADS = ("Lum", "Bright", "Nor", "Vel", "Kin", "Sol", "Ard", "Mav", "Tor", "Ela", "Qui", "Ost",
               "Pel", "Zen", "Cor", "Hal")
BRAND_TAILS = ("ora", "well", "dex", "ina", "lux", "ford", "ique", "ara", "tek", "ven", "mont", "ix")

#: Words that appear in titles and that a part-of-speech tagger would call nouns (besides types and brands).
GENERIC_NOUNS = frozenset({"men", "women", "kids", "girls", "families", "travel", "school", "gift", "set", "pack",
                           "hair", "skin", "home", "office"})

#: Title modifiers: marketing words with no bearing on attributes (so no accidental attribute matches).
MODIFIERS = ("Premium", "Classic", "Original", "Essential", "Signature", "Everyday", "Pro", "Deluxe", "Modern",
             "Ultra")

#: WebShop's base colours for ``normalize_color`` (``COLOR_SET`` in ``web_agent_site/engine/normalize.py`` of
#: princeton-nlp/WebShop, commit 64fa2a5, MIT): all 102, in WebShop's (alphabetical) order, because the first
#: one found as a *substring* wins: ``dark grey`` -> ``dark``, ``navy blue`` -> ``blue``, ``light wash`` ->
#: ``ash``. A fact list carried as data; the matching code is ours.
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue", "blush",
    "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne", "charcoal", "cheetah",
    "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral", "cranberry", "cream",
    "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia", "gold", "granite", "grape",
    "graphite", "grass", "gray", "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender",
    "lemon", "leopard", "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint",
    "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive", "orange", "peach",
    "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire",
    "seashell", "silver", "skull", "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal",
    "tiger", "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
)
