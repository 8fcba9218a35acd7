"""k-ary tree search with a hidden goal leaf: rules (the depth-first explorer) and the env."""
