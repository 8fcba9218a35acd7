"""Building and debugging small C and Python programs: compile errors, Makefiles, logic bugs, imports."""

import hashlib

from ..task import make_task


def unchanged(path: str, content: str) -> str:
    """A check that ``path`` still holds ``content``: the digest is part of the check, not a file in the sandbox."""
    return f"echo '{hashlib.sha256(content.encode()).hexdigest()}  {path}' | sha256sum -c --quiet -"


MAIN_PY = "from shop.cart import total\n\nprint(f'total: {total([\"apple\", \"pear\", \"pear\"]):.2f}')\n"

HELLO_C = '#include <stdio.h>\n\nint main(void) {\n    printf("Hello, world!\\n");\n    return 0;\n}\n'
CALC_C = """#include <stdio.h>
#include <stdlib.h>

int add(int a, int b) {
    return a + b
}

int main(int argc, char **argv) {
    printf("%d\\n", add(atoi(argv[1]), atoi(argv[2])));
    return 0;
}
"""
SUM_C = """#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = atoi(argv[1]), total = 0;
    for (int i = 1; i < n; i++)
        total += i;
    printf("%d\\n", total);
    return 0;
}
"""
GREET_C = """#include <stdio.h>

int main(int argc, char **argv) {
    char *name = argv[1];
    printf("Hello, %c%s!\\n", name[0], name + 1);
    return 0;
}
"""
GREET_FIX = """cat > greet.c <<'EOF'
#include <stdio.h>

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "stranger";
    printf("Hello, %s!\\n", name);
    return 0;
}
EOF
gcc -o greet greet.c"""
MAKEFILE = ("printf 'app: main.o util.o\\n\\tgcc -o app main.o util.o\\n\\n%%.o: %%.c util.h\\n\\tgcc -c $< -o $@\\n\\n"
            "clean:\\n\\trm -f app *.o\\n' > Makefile")
MATHX = ("def mean(values):\n    return sum(values) / len(values) - 1\n\n\n"
         "def clamp(x, low, high):\n    return max(low, min(x, high))\n")
TEST_MATHX = ("from mathx import clamp, mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
              "def test_clamp():\n    assert clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0\n")

TASKS = [
    make_task(
        "build/hello-c", "build", "easy",
        "Compile hello.c into an executable named hello in /work.",
        files={"hello.c": HELLO_C},
        solution=["gcc -o hello hello.c"],
        tests={"./hello greets": '[ "$(./hello)" = "Hello, world!" ]'},
    ),
    make_task(
        "build/fix-syntax", "build", "easy",
        "calc.c does not compile. Fix it and build the executable calc (./calc 2 3 prints 5).",
        files={"calc.c": CALC_C},
        solution=["sed -i 's/return a + b$/return a + b;/' calc.c", "gcc -o calc calc.c"],
        tests={"./calc adds": '[ "$(./calc 2 3)" = 5 ] && [ "$(./calc 40 2)" = 42 ]'},
    ),
    make_task(
        "build/makefile", "build", "medium",
        "Write a Makefile so that `make` builds the program app from main.c and util.c (which include util.h), "
        "and `make clean` removes app and the object files.",
        files={"main.c": '#include <stdio.h>\n#include "util.h"\n\nint main(void) {\n    printf("%d\\n", square(7));\n'
                         "    return 0;\n}\n",
               "util.c": '#include "util.h"\n\nint square(int x) { return x * x; }\n',
               "util.h": "int square(int x);\n"},
        solution=[MAKEFILE, "make"],
        tests={
            "make builds app": 'make clean >/dev/null 2>&1; make >/dev/null && [ "$(./app)" = 49 ]',
            "make clean cleans": 'make >/dev/null && make clean >/dev/null && ! ls app *.o 2>/dev/null',
        },
    ),
    make_task(
        "build/fix-logic", "build", "medium",
        "./sum N should print 1 + 2 + ... + N (./sum 10 prints 55), but it prints the wrong number. Fix sum.c "
        "and rebuild sum.",
        files={"sum.c": SUM_C},
        setup="gcc -o sum sum.c",
        solution=["sed -i 's/i < n/i <= n/' sum.c", "gcc -o sum sum.c"],
        tests={"./sum 10": '[ "$(./sum 10)" = 55 ]', "./sum 1": '[ "$(./sum 1)" = 1 ]'},
    ),
    make_task(
        "build/fix-segfault", "build", "hard",
        "./greet NAME prints 'Hello, NAME!', but ./greet without an argument crashes. Make it print "
        "'Hello, stranger!' when no name is given, and rebuild greet.",
        files={"greet.c": GREET_C},
        setup="gcc -o greet greet.c",
        solution=[GREET_FIX],
        tests={"with a name": '[ "$(./greet Ada)" = "Hello, Ada!" ]',
               "without": '[ "$(./greet)" = "Hello, stranger!" ]'},
    ),
    make_task(
        "build/python-import", "build", "medium",
        "`python3 main.py` fails with an import error. Fix the shop package (do not change main.py) so that it "
        "prints the cart total.",
        files={"main.py": MAIN_PY,
               "shop/__init__.py": "", "shop/prices.py": "PRICES = {'apple': 0.5, 'pear': 21.0}\n\n\n"
                                                       "def price(item):\n    return PRICES[item]\n",
               "shop/cart.py": ("from shop.pricing import price\n\n\n"
                                "def total(items):\n    return sum(price(i) for i in items)\n")},
        solution=["sed -i 's/shop.pricing/shop.prices/' shop/cart.py"],
        tests={"main.py runs": '[ "$(python3 main.py)" = "total: 42.50" ]',
               "main.py unchanged": unchanged("main.py", MAIN_PY)},
    ),
    make_task(
        "build/fix-unit-tests", "build", "medium",
        "The tests in test_mathx.py fail. Fix mathx.py (not the tests) so that "
        "`python3 -m pytest -q test_mathx.py` passes.",
        files={"mathx.py": MATHX, "test_mathx.py": TEST_MATHX},
        solution=["sed -i 's| / len(values) - 1| / len(values)|' mathx.py"],
        tests={
            # -P: a planted pytest.py is not imported; -c /dev/null and --noconftest: no planted ini file or
            # conftest.py can rewrite outcomes (pytest still puts the test file's directory on sys.path).
            "pytest passes": ("python3 -P -m pytest -q -p no:cacheprovider -c /dev/null --rootdir=. --noconftest "
                              "test_mathx.py >/dev/null"),
            "tests unchanged": unchanged("test_mathx.py", TEST_MATHX),
            # mathx runs inside pytest's process and could end it with status 0; this verdict is made outside.
            "mean is right": """[ "$(python3 -c 'import mathx; print(mathx.mean([2, 4, 9]))')" = 5.0 ]""",
        },
    ),
]
