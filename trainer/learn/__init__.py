"""Learning from collected experience: the second stage of an RL step.

Owns turning trajectories into a gradient step: advantage estimators and their hooks (``algorithms/``,
``algorithm:``), the clipped policy-gradient loss (``loss``, ``loss:``), packing and log-probs (``logprobs``;
``kernels/`` computes them from hidden states without [N, V] logits), the value head (``value``), the update
with its minibatches and micro-batches (``update``, ``optim:``) and behaviour cloning (``bc``, ``bc:``). It
works on trajectories and plain torch modules; which model they are is the models' business.

May import: errors, seeding, collect.
"""
