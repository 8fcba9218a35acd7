"""The Wordle word lists, written here (no download): common five-letter English words.

``WORDS`` is both the dictionary of admissible guesses and the secret pool of the medium and hard
presets; ``EASY_ANSWERS`` is a smaller pool of everyday words that the easy preset draws secrets from
(guesses may still be any word of ``WORDS``). Both are sorted tuples, so the lists are part of the
code's version: changing them is a behaviour change and needs a new env version.
"""

from __future__ import annotations

WORDS: tuple[str, ...] = (
    "about", "above", "abuse", "actor", "acute", "admit", "adopt", "adult", "after", "again", "agent", "agree",
    "ahead", "alarm", "album", "alert", "alike", "alive", "allow", "alone", "along", "alter", "among", "anger",
    "angle", "angry", "apart", "apple", "apply", "arena", "argue", "arise", "armed", "array", "aside", "asset",
    "avoid", "award", "aware", "awful", "badly", "baker", "basic", "basis", "beach", "began", "begin", "begun",
    "being", "below", "bench", "birth", "black", "blade", "blame", "blank", "blind", "block", "blood", "board",
    "boost", "booth", "bound", "brain", "brand", "bread", "break", "breed", "brief", "bring", "broad", "broke",
    "brown", "brush", "build", "built", "buyer", "cabin", "cable", "candy", "carry", "catch", "cause", "chain",
    "chair", "chalk", "chart", "chase", "cheap", "check", "chest", "chief", "child", "chose", "civil", "claim",
    "class", "clean", "clear", "clerk", "click", "climb", "clock", "close", "cloud", "coach", "coast", "could",
    "count", "court", "cover", "craft", "crane", "crash", "cream", "crime", "cross", "crowd", "crown", "curve",
    "cycle", "daily", "dance", "dated", "dealt", "death", "debut", "delay", "depth", "dirty", "doubt", "dozen",
    "draft", "drama", "drawn", "dream", "dress", "drink", "drive", "drove", "dying", "eager", "early", "earth",
    "eight", "elite", "empty", "enemy", "enjoy", "enter", "entry", "equal", "error", "event", "every", "exact",
    "exist", "extra", "faith", "false", "fault", "fence", "fiber", "field", "fifth", "fifty", "fight", "final",
    "first", "fixed", "flash", "fleet", "floor", "fluid", "focus", "force", "forth", "forty", "forum", "found",
    "frame", "frank", "fraud", "fresh", "front", "fruit", "fully", "funny", "giant", "given", "glass", "globe",
    "glory", "grace", "grade", "grand", "grant", "grass", "great", "green", "gross", "group", "grown", "guard",
    "guess", "guest", "guide", "happy", "heart", "heavy", "hence", "horse", "hotel", "house", "human", "humor",
    "ideal", "image", "index", "inner", "input", "issue", "joint", "judge", "juice", "knife", "knock", "known",
    "label", "large", "laser", "later", "laugh", "layer", "learn", "lease", "least", "leave", "legal", "lemon",
    "level", "light", "limit", "local", "logic", "loose", "lucky", "lunch", "major", "maker", "march", "match",
    "maybe", "mayor", "meant", "media", "metal", "might", "minor", "minus", "mixed", "model", "money", "month",
    "moral", "motor", "mount", "mouse", "mouth", "movie", "music", "nerve", "never", "newly", "night", "noise",
    "north", "novel", "nurse", "occur", "ocean", "offer", "often", "order", "other", "ought", "outer", "owner",
    "paint", "panel", "paper", "party", "peace", "phase", "phone", "photo", "piano", "piece", "pilot", "pitch",
    "place", "plain", "plane", "plant", "plate", "point", "pound", "power", "press", "price", "pride", "prime",
    "print", "prior", "prize", "proof", "proud", "prove", "queen", "quick", "quiet", "quite", "radio", "raise",
    "range", "rapid", "ratio", "reach", "react", "ready", "refer", "relax", "reply", "right", "rival", "river",
    "robot", "rough", "round", "route", "royal", "rural", "salad", "sauce", "scale", "scene", "scope", "score",
    "sense", "serve", "seven", "shade", "shake", "shall", "shape", "share", "sharp", "sheep", "sheet", "shelf",
    "shell", "shift", "shirt", "shock", "shoot", "short", "shown", "sight", "since", "sixth", "sixty", "skill",
    "sleep", "slide", "small", "smart", "smile", "smoke", "snake", "solid", "solve", "sorry", "sound", "south",
    "space", "spare", "speak", "speed", "spend", "spent", "split", "spoke", "sport", "staff", "stage", "stake",
    "stand", "start", "state", "steam", "steel", "stick", "still", "stock", "stone", "stood", "store", "storm",
    "story", "strip", "stuck", "study", "stuff", "style", "sugar", "suite", "super", "sweet", "table", "taken",
    "taste", "teach", "teeth", "thank", "theme", "there", "thick", "thing", "think", "third", "those", "three",
    "threw", "throw", "tiger", "tight", "timer", "tired", "title", "toast", "today", "token", "total", "touch",
    "tough", "tower", "toxic", "trace", "track", "trade", "train", "treat", "trend", "trial", "tribe", "trick",
    "tried", "truck", "truly", "trust", "truth", "twice", "uncle", "under", "union", "unity", "until", "upper",
    "upset", "urban", "usage", "usual", "valid", "value", "video", "virus", "visit", "vital", "voice", "waste",
    "watch", "water", "wheel", "where", "which", "while", "white", "whole", "whose", "woman", "women", "world",
    "worry", "worse", "worst", "worth", "would", "wound", "write", "wrong", "wrote", "young", "youth", "zebra",
)

EASY_ANSWERS: tuple[str, ...] = (
    "about", "after", "again", "apple", "beach", "bench", "black", "bread", "brush", "candy", "chair", "child",
    "clean", "clock", "cloud", "cream", "dance", "dream", "dress", "drink", "earth", "eight", "field", "floor",
    "fruit", "glass", "grass", "green", "guest", "happy", "heart", "heavy", "horse", "hotel", "house", "human",
    "juice", "knife", "laugh", "lemon", "light", "lunch", "money", "month", "mouse", "mouth", "movie", "music",
    "night", "north", "ocean", "paper", "party", "peace", "phone", "photo", "piano", "place", "plant", "plate",
    "queen", "quick", "quiet", "radio", "river", "robot", "round", "salad", "sauce", "sheep", "shirt", "sleep",
    "small", "smile", "snake", "sound", "south", "space", "sport", "stone", "storm", "story", "sugar", "sweet",
    "table", "teeth", "thank", "three", "tiger", "toast", "today", "tower", "train", "truck", "uncle", "water",
    "wheel", "white", "woman", "world", "write", "young", "zebra",
)
