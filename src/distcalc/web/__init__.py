"""``distcalc serve``: the calculator as a local web page over a JSON API that is the CLI's ``--json``
contract over HTTP (needs the ``web`` extra: FastAPI + uvicorn). Every script and style is shipped in
``static/``; the page makes no request outside its own server."""
