"""The fixed world of Twenty Questions, written here: 100 objects, each with the attributes true of it.

Every attribute not listed for an object is false for it. Each attribute has a canonical question and the
keywords that match a question to it (see :func:`rules.match_attribute` for the rule). ``small`` is the
negation of ``big`` so that "is it smaller than a breadbox?" gets the right answer. Facts are everyday
approximations ("a dog is bigger than a breadbox"); what matters is that they are fixed and documented.
No two objects share every attribute (tested), so twenty questions can always tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attribute:
    """A yes/no property: the question that asks it, the keyword phrases that select it, its negation."""

    question: str
    keywords: tuple[str, ...]
    negation_of: str | None = None


ATTRIBUTES: dict[str, Attribute] = {
    "alive": Attribute("Is it alive?", ("alive", "living", "organism", "living thing")),
    "animal": Attribute("Is it an animal?", ("animal", "animals", "creature")),
    "mammal": Attribute("Is it a mammal?", ("mammal", "mammals")),
    "bird": Attribute("Is it a bird?", ("bird", "birds")),
    "fish": Attribute("Is it a fish?", ("fish",)),
    "insect": Attribute("Is it an insect or a spider?", ("insect", "insects", "bug", "spider", "arachnid")),
    "reptile": Attribute("Is it a reptile or an amphibian?", ("reptile", "reptiles", "amphibian", "amphibians")),
    "plant": Attribute("Is it a plant?", ("plant", "plants", "vegetation", "flower")),
    "food": Attribute("Is it food?", ("food", "eat", "edible", "eaten", "eatable")),
    "fruit": Attribute("Is it a fruit?", ("fruit", "fruits")),
    "vegetable": Attribute("Is it a vegetable?", ("vegetable", "vegetables", "veggie")),
    "sweet": Attribute("Is it sweet?", ("sweet", "sugar", "sugary", "dessert")),
    "drink": Attribute("Is it a drink?", ("drink", "drinkable", "beverage", "liquid")),
    "man_made": Attribute("Is it man-made?", ("man-made", "manmade", "artificial", "manufactured",
                                               "human-made", "made by people", "made by humans")),
    "electronic": Attribute("Does it use electricity?", ("electronic", "electric", "electricity", "battery",
                                                         "batteries", "plug", "power", "powered")),
    "vehicle": Attribute("Is it a vehicle?", ("vehicle", "vehicles", "transport", "transportation", "ride")),
    "wheels": Attribute("Does it have wheels?", ("wheel", "wheels")),
    "furniture": Attribute("Is it furniture?", ("furniture",)),
    "tool": Attribute("Is it a tool?", ("tool", "tools")),
    "kitchen": Attribute("Is it found in a kitchen?", ("kitchen", "cooking", "cook")),
    "clothing": Attribute("Is it worn?", ("clothing", "clothes", "wear", "worn", "wearable", "garment", "accessory")),
    "instrument": Attribute("Is it a musical instrument?", ("instrument", "music", "musical")),
    "sport": Attribute("Is it used in sports or games?", ("sport", "sports", "game", "games", "toy", "play")),
    "metal": Attribute("Is it made of metal?", ("metal", "metallic", "iron", "steel")),
    "wood": Attribute("Is it made of wood?", ("wood", "wooden")),
    "big": Attribute("Is it bigger than a breadbox?", ("big", "bigger", "large", "larger", "huge")),
    "small": Attribute("Is it smaller than a breadbox?", ("small", "smaller", "little", "tiny"), negation_of="big"),
    "water": Attribute("Does it live in or go on water?", ("water", "sea", "ocean", "swim", "swims", "aquatic")),
    "fly": Attribute("Can it fly?", ("fly", "flies", "flying", "air")),
    "legs": Attribute("Does it have legs?", ("leg", "legs")),
    "four_legs": Attribute("Does it have four legs?", ("four legs", "4 legs", "four-legged", "quadruped")),
    "pet": Attribute("Is it kept as a pet?", ("pet", "pets", "domestic")),
    "farm": Attribute("Is it found on a farm?", ("farm", "farmyard")),
    "dangerous": Attribute("Is it dangerous?", ("dangerous", "danger", "harmful", "venomous", "poisonous")),
    "wild": Attribute("Does it live in the wild?", ("wild", "jungle", "forest", "savanna")),
    "outdoors": Attribute("Is it usually found outdoors?", ("outdoors", "outside", "outdoor")),
    "home": Attribute("Is it usually found in a home?", ("home", "house", "household", "indoors")),
    "red": Attribute("Is it usually red?", ("red",)),
    "yellow": Attribute("Is it usually yellow?", ("yellow",)),
    "green": Attribute("Is it usually green?", ("green",)),
    "white": Attribute("Is it usually white?", ("white",)),
    "black": Attribute("Is it usually black?", ("black",)),
    "brown": Attribute("Is it usually brown?", ("brown",)),
    "grey": Attribute("Is it usually grey?", ("grey", "gray")),
    "round": Attribute("Is it round?", ("round", "sphere", "spherical", "circular")),
    "soft": Attribute("Is it soft?", ("soft",)),
    "sharp": Attribute("Is it sharp?", ("sharp", "blade", "cut", "cuts", "pointy")),
    "screen": Attribute("Does it have a screen?", ("screen", "display")),
    "paper": Attribute("Is it made of paper?", ("paper",)),
    "glass": Attribute("Is it made of glass?", ("glass",)),
    "plastic": Attribute("Is it made of plastic?", ("plastic",)),
    "fur": Attribute("Does it have fur?", ("fur", "furry", "hair", "hairy")),
    "wings": Attribute("Does it have wings?", ("wing", "wings")),
    "tail": Attribute("Does it have a tail?", ("tail",)),
}

# name: the attributes true of it (everything else is false); "big" means bigger than a breadbox.
_TABLE = """
dog: alive animal mammal legs four_legs pet fur tail home outdoors big
cat: alive animal mammal legs four_legs pet fur tail home
horse: alive animal mammal legs four_legs farm fur tail outdoors big brown
cow: alive animal mammal legs four_legs farm tail outdoors big white black
pig: alive animal mammal legs four_legs farm tail outdoors big
sheep: alive animal mammal legs four_legs farm fur tail outdoors big white soft
rabbit: alive animal mammal legs four_legs pet fur tail soft wild outdoors
mouse: alive animal mammal legs four_legs fur tail wild home grey
elephant: alive animal mammal legs four_legs wild tail outdoors big dangerous grey
lion: alive animal mammal legs four_legs wild fur tail outdoors big dangerous yellow
tiger: alive animal mammal legs four_legs wild fur tail outdoors big dangerous
bear: alive animal mammal legs four_legs wild fur outdoors big dangerous brown
giraffe: alive animal mammal legs four_legs wild tail outdoors big yellow
zebra: alive animal mammal legs four_legs wild tail outdoors big white black
monkey: alive animal mammal legs wild fur tail outdoors big brown
kangaroo: alive animal mammal legs wild tail outdoors big brown
whale: alive animal mammal water wild tail big
dolphin: alive animal mammal water wild tail big grey
bat: alive animal mammal fly wings wild fur black
shark: alive animal fish water wild tail big dangerous grey
goldfish: alive animal fish water pet tail home
salmon: alive animal fish water wild tail food
octopus: alive animal water wild soft
frog: alive animal reptile legs four_legs water wild green
snake: alive animal reptile wild tail dangerous outdoors
turtle: alive animal reptile legs four_legs water wild tail pet
crocodile: alive animal reptile legs four_legs water wild tail big dangerous green
chicken: alive animal bird legs wings farm tail outdoors food
duck: alive animal bird legs wings fly water farm tail outdoors
eagle: alive animal bird legs wings fly wild tail outdoors brown
penguin: alive animal bird legs wings water wild tail black white
parrot: alive animal bird legs wings fly pet tail home green
bee: alive animal insect legs wings fly wild outdoors yellow black dangerous
butterfly: alive animal insect legs wings fly wild outdoors
ant: alive animal insect legs wild outdoors black
spider: alive animal insect legs wild home black
tree: alive plant outdoors big green wood
rose: alive plant outdoors red
sunflower: alive plant outdoors yellow farm
cactus: alive plant outdoors green sharp
grass: alive plant outdoors green farm soft
apple: alive plant food fruit sweet round red kitchen
banana: alive plant food fruit sweet yellow kitchen
orange: alive plant food fruit sweet round kitchen
strawberry: alive plant food fruit sweet red
lemon: alive plant food fruit yellow kitchen
watermelon: alive plant food fruit sweet round green big
carrot: alive plant food vegetable farm
potato: alive plant food vegetable farm brown kitchen
tomato: alive plant food vegetable round red kitchen
bread: food man_made kitchen brown soft
cheese: food man_made kitchen yellow
egg: food kitchen white farm
pizza: food man_made kitchen round
cake: food man_made sweet kitchen soft
chocolate: food man_made sweet brown
ice cream: food man_made sweet soft white
milk: food drink farm white kitchen
chair: man_made furniture legs four_legs home wood big
table: man_made furniture legs four_legs home wood big kitchen
bed: man_made furniture legs home big soft
sofa: man_made furniture home big soft
lamp: man_made electronic home furniture
clock: man_made electronic home round
mirror: man_made glass home
window: man_made glass home big
door: man_made wood home big
book: man_made paper home
pencil: man_made wood tool sharp
scissors: man_made metal tool sharp kitchen
knife: man_made metal tool sharp kitchen dangerous
spoon: man_made metal kitchen
cup: man_made kitchen home round
frying pan: man_made metal kitchen black round
refrigerator: man_made electronic kitchen home big white metal
microwave: man_made electronic kitchen home metal screen
television: man_made electronic home screen black big
computer: man_made electronic home screen tool plastic
phone: man_made electronic screen tool plastic
camera: man_made electronic screen tool black plastic
umbrella: man_made tool outdoors black
key: man_made metal tool
candle: man_made home white
pillow: man_made home soft white
toothbrush: man_made home plastic tool
shoe: man_made clothing
hat: man_made clothing soft
ring: man_made clothing metal round
hammer: man_made metal wood tool
bicycle: man_made vehicle wheels metal outdoors big
car: man_made vehicle wheels metal outdoors big electronic
bus: man_made vehicle wheels metal outdoors big electronic yellow
airplane: man_made vehicle fly wings metal outdoors big electronic white
boat: man_made vehicle water outdoors big
helicopter: man_made vehicle fly metal outdoors big electronic
guitar: man_made instrument wood big
piano: man_made instrument wood big black white furniture home
drum: man_made instrument round
violin: man_made instrument wood brown
football: man_made sport round outdoors white black
"""

OBJECTS: dict[str, frozenset[str]] = {
    name.strip(): frozenset(attrs.split())
    for name, _, attrs in (line.partition(":") for line in _TABLE.strip().splitlines())
}
