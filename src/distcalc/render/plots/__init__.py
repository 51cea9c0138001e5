"""Every matplotlib figure distcalc draws, one module per command: ``analyze``, ``memory``, ``search``,
``collective`` (time and bus bandwidth vs size), ``simulate`` (per-link heatmaps, per-step timeline), ``bench``
(measured bus bandwidth); the shared axes and backend set-up are in :mod:`distcalc.render.plots.axes`."""
