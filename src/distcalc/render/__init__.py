"""The rendering layer: every figure (:mod:`distcalc.render.plots`) and the presentation helpers the command
line and the web page share. It sits above the computation (it draws the typed results that ``analyze``,
``memory``, ``search``, ``simulate``, ``collective``, ``bench`` and ``calibrate`` return) and below ``cli/`` and
``web/``; nothing in the computation imports it. matplotlib is imported inside the drawing functions only."""
