"""How values are shown: each output language's escaper for values from strangers, a terminal's
shortened lines, tables and progress bar, and file names without this machine's folders. Used by
every stage that writes for a person; it knows nothing of cases or verdicts."""
