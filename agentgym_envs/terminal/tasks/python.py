"""Python scripting: small scripts and modules, written or repaired."""

from ..task import make_task


def value_is(program: str, expected: str) -> str:
    """A check that ``python3 -c program`` prints ``expected``.

    The comparison is made by the check's shell, outside the Python process that imports the agent's module:
    that module can end its process with any status, so an ``assert`` inside it would prove nothing.
    """
    if "'" in program + expected:
        raise ValueError(f"value_is: expected a program and a value without single quotes, got {program!r}")
    return f"""[ "$(python3 -c '{program}')" = '{expected}' ]"""

FIZZBUZZ = '''cat > fizzbuzz.py <<'EOF'
import sys

for i in range(1, int(sys.argv[1]) + 1):
    print("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else i)
EOF'''

STATS = '''cat > stats.py <<'EOF'
import statistics
import sys

with open(sys.argv[1]) as f:
    numbers = [float(line) for line in f if line.strip()]
print(f"mean={statistics.mean(numbers):.2f} median={statistics.median(numbers):.2f}")
EOF'''

INVENTORY = '''\
def total_value(items):
    """Sum of quantity * price over items, a list of (name, quantity, price)."""
    total = 0
    for i in range(1, len(items)):
        name, quantity, price = items[i]
        total += quantity * price
    return total
'''

PALINDROME = '''cat > textutils.py <<'EOF'
def is_palindrome(text):
    letters = [c.lower() for c in text if c.isalnum()]
    return letters == letters[::-1]
EOF'''

WORDCOUNT = '''cat > wc.py <<'EOF'
import sys

text = sys.stdin.read()
print(len(text.splitlines()), len(text.split()), len(text))
EOF'''

REPORT = '''cat > report.py <<'EOF'
import json
from collections import defaultdict

totals = defaultdict(float)
for order in json.load(open("orders.json")):
    totals[order["customer"]] += order["amount"]
for name in sorted(totals):
    print(f"{name}: {totals[name]:.2f}")
EOF'''

ORDERS = ('[{"customer": "zoe", "amount": 12.5}, {"customer": "adam", "amount": 3}, '
          '{"customer": "zoe", "amount": 7.25}, {"customer": "mia", "amount": 10}, '
          '{"customer": "adam", "amount": 0.5}]\n')

TASKS = [
    make_task(
        "python/fizzbuzz", "python", "easy",
        "Write fizzbuzz.py so that `python3 fizzbuzz.py N` prints the numbers 1 to N, one per line, printing "
        "Fizz for multiples of 3, Buzz for multiples of 5 and FizzBuzz for multiples of both.",
        solution=[FIZZBUZZ],
        tests={
            "N=15": ('[ "$(python3 fizzbuzz.py 15 | tr "\\n" " ")" = '
                     '"1 2 Fizz 4 Buzz Fizz 7 8 Fizz Buzz 11 Fizz 13 14 FizzBuzz " ]'),
            "N=1": '[ "$(python3 fizzbuzz.py 1)" = 1 ]',
        },
    ),
    make_task(
        "python/stats", "python", "easy",
        "Write stats.py: `python3 stats.py FILE` reads one number per line from FILE and prints "
        "`mean=<mean> median=<median>` with two decimals each (for example mean=2.50 median=2.00).",
        files={"numbers.txt": "4\n8\n15\n16\n23\n42\n"},
        solution=[STATS],
        tests={
            "numbers.txt": '[ "$(python3 stats.py numbers.txt)" = "mean=18.00 median=15.50" ]',
            "another file": ('t=$(mktemp) && printf "1\\n2\\n10\\n" > "$t" '
                             '&& [ "$(python3 stats.py "$t")" = "mean=4.33 median=2.00" ]'),
        },
    ),
    make_task(
        "python/fix-total", "python", "medium",
        "total_value() in inventory.py returns wrong results (it should sum quantity * price over all items). "
        "Fix the bug.",
        files={"inventory.py": INVENTORY},
        solution=["sed -i 's/range(1, len(items))/range(len(items))/' inventory.py"],
        tests={
            "three items": value_is('import inventory as i; print(i.total_value([("a", 2, 3), ("b", 1, 10), '
                                    '("c", 4, 1)]))', "20"),
            "one item": value_is('import inventory as i; print(i.total_value([("a", 5, 2)]))', "10"),
            "no items": value_is("import inventory as i; print(i.total_value([]))", "0"),
        },
    ),
    make_task(
        "python/palindrome", "python", "easy",
        "Create textutils.py with a function is_palindrome(text) that returns True when text reads the same "
        "backwards, ignoring case, spaces and punctuation.",
        solution=[PALINDROME],
        tests={
            "true cases": value_is('from textutils import is_palindrome as p; '
                                   'print(p("Racecar"), p("A man, a plan, a canal: Panama"), p(""))', "True True True"),
            "false cases": value_is('from textutils import is_palindrome as p; print(p("hello"), p("ab"))',
                                    "False False"),
        },
    ),
    make_task(
        "python/wordcount", "python", "medium",
        "Write wc.py: it reads text from standard input and prints `<lines> <words> <characters>` (like wc, "
        "separated by single spaces).",
        solution=[WORDCOUNT],
        tests={
            "two lines": '[ "$(printf "hello world\\nbye\\n" | python3 wc.py)" = "2 3 16" ]',
            "empty input": '[ "$(python3 wc.py < /dev/null)" = "0 0 0" ]',
        },
    ),
    make_task(
        "python/json-report", "python", "medium",
        "Write report.py: it reads orders.json (a list of {customer, amount}) and prints one line per customer, "
        "sorted by name, as `<name>: <total>` with the total to two decimals.",
        files={"orders.json": ORDERS},
        solution=[REPORT],
        tests={"report is right": '[ "$(python3 report.py)" = "$(printf "adam: 3.50\\nmia: 10.00\\nzoe: 19.75")" ]'},
    ),
]
