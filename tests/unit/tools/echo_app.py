"""A WSGI app for the wsgi_serve tests: answers the body's length and hash."""

import hashlib


def echo(environ, start_response):
    """Read the whole request body; answer ``LENGTH SHA256``."""
    body = environ['wsgi.input'].read()
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'%d %s' % (len(body), hashlib.sha256(body).hexdigest().encode())]


def init_argv():
    """An app built at start that answers the ``sys.argv`` it was built in.

    What an oslo.config app (Watcher's) parses its files from.
    """
    import json
    import sys
    argv = json.dumps(sys.argv[1:]).encode()

    def app(environ, start_response):
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [argv]
    return app
