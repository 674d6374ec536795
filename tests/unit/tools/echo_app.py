"""A WSGI app for the wsgi_serve tests: answers the body's length and hash."""

import hashlib


def echo(environ, start_response):
    """Read the whole request body; answer ``LENGTH SHA256``."""
    body = environ['wsgi.input'].read()
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'%d %s' % (len(body), hashlib.sha256(body).hexdigest().encode())]
