"""How a program is started, watched and ended: the one command parser (`command`), a run and the
cold start (`run`), the `subreaper` wrapper and containment, what a program prints (`capture`),
and warm starts behind one interface (`warm`) for Python (`python_warm`, `zygote`) and Node
(`node_warm`) programs."""
