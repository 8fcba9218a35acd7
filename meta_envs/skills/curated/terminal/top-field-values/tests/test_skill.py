import skill


def test_the_most_frequent_first_field():
    assert skill.top(["10.0.0.1 GET /", "10.0.0.2 GET /a", "10.0.0.1 POST /b"], "1", 1) == ["10.0.0.1"]


def test_words_are_letters_lower_cased_and_ties_alphabetical():
    assert skill.top(["The cat, the DOG!", "cat the dog"], "words", 3) == ["the", "cat", "dog"]


def test_short_lines_are_skipped():
    assert skill.top(["a", "b c", "d c"], "2", 5) == ["c"]
