"""Twenty Questions: the object table, rules (keyword matching, answerer, questioner) and the env."""
