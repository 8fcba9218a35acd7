"""Single-player puzzle games: each one a pure, property-tested ``rules.py`` and a ``TextEnv`` in ``env.py``.

===================  ==========================================  =====================================
game                 native actions                              scripted expert (``expert_action``)
===================  ==========================================  =====================================
``wordle``           ``guess crane``                             minimax over consistent words
``mastermind``       ``guess 1234``                              consistent codes, minimax when few
``sudoku``           ``place 3 at r2c4``, ``r2c4=3``, ``clear``  the unique solution, cell by cell
``minesweeper``      ``reveal 3 4``, ``flag 3 4``, ``unflag``    deduction (boards are no-guess)
``countdown``        ``(25 + 50) * 4 - 3``; stepwise ``25 * 4``  iterative-deepening search
``hanoi``            ``move disk from A to C``, ``A->C``         optimal from any position
``tree_search``      ``2``, ``back``                             depth-first search, blind to the goal
``twenty_questions`` ``Is it an animal?``, ``guess dog``         most even split of the candidates
===================  ==========================================  =====================================

Every game takes ``difficulty="easy" | "medium" | "hard"``; ids are registered in ``register.py``. Each env
also offers ``random_action(rng)``: a uniformly random well-formed, rule-abiding move, the random baseline
for games whose valid actions are too many to list.
"""
