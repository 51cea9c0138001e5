"""``python -m distcalc.cli``: the same as the ``distcalc`` command."""

from distcalc.cli import main

main()
