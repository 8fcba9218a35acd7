"""Tutoring: simulated students whose knowledge is explicit state, a tutor env and a practice scheduler.

Tutoring agents trained against LLM-played students learn to please a simulator that is slow,
non-deterministic and flips to the right answer under any feedback. Here a student's knowledge is
symbolic state (BKT skills and documented misconceptions, each a buggy procedure), answers are computed
from it, and language is only a rendering of it. See ``README.md`` beside this file for the design and
the literature.

The layers, each its own module:

* :mod:`.domain` knowledge components, misconceptions (buggy procedures) and the item generator;
  :mod:`.answers` exact answer values;
* :mod:`.bkt` Bayesian Knowledge Tracing; :mod:`.student` students and personas; :mod:`.dynamics` the
  documented learning rules; :mod:`.utterances` the student's words and the verbaliser hook;
* :mod:`.moves` tutor moves and the tutor's view; :mod:`.interpreter` free text → moves;
  :mod:`.leaks` revealed answers; :mod:`.session` pre-test, post-test and score; :mod:`.render` the
  tutor-facing text; :mod:`.config` settings;
* :mod:`.tutor_env` and :mod:`.scheduling_env` the contract adapters; :mod:`.tutors` and
  :mod:`.schedulers` the scripted baselines; :mod:`.evaluation` returns with confidence intervals;
  :mod:`.register` the ids.
"""
