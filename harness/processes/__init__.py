"""How a program is started, watched and ended: the `subreaper` wrapper and containment, what a
program prints (`capture`), and warm starts of Python (`python_warm`, `zygote`) and Node
(`node_warm`) programs."""
