"""The most frequent values in a text file: ``python3 skill.py FILE FIELD K`` prints the K most frequent,
one per line, most frequent first (ties: alphabetical). FIELD is a 1-based whitespace-separated field,
or ``words`` for runs of letters, lower-cased."""

import re
import sys
from collections import Counter


def top(lines, field, k):
    """The ``k`` most frequent values of ``field`` over ``lines``."""
    counts = Counter()
    for line in lines:
        if field == "words":
            counts.update(word.lower() for word in re.findall(r"[A-Za-z]+", line))
        else:
            parts = line.split()
            if len(parts) >= int(field):
                counts[parts[int(field) - 1]] += 1
    return [value for value, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]]


if __name__ == "__main__":
    path, field, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(path, encoding="utf-8", errors="replace") as handle:
        print("\n".join(top(handle, field, k)))
