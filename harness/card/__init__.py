"""`toolstream report-card`: the matrix over released libraries, one side environment per version.

`libraries.py` names what can be graded (library -> adapter, package, dialects), `clients.py` the
client programs graded like libraries; `environments.py`
builds and caches one virtualenv per library and version; `grading.py` runs the matrix through
`serve-accumulator` in each and sums it up (rows, failure signatures with their worst case,
changes between versions); `schedule.py` runs the rows at once, as many as there are slots
(cores, or `-j`); `verdicts.py` keeps each row's verdicts under a key of all they depend on, so
an unchanged row is not graded again; `known.py` holds what we know of each signature (upstream issue,
the library line responsible, from `known.yaml`); `render.py` writes Markdown, HTML and the
blocks of docs/report-card.md.
"""
