#!/usr/bin/env python3
"""A tiny app backend for the tests of `http` operations: a real process on loopback.

Usage: backend.py  (binds 127.0.0.1:0 and prints the port on its first line)

Routes:
  GET  /_routes  the routes below, as [{"method", "path"}]
  POST /echo     answers {"body": <the JSON body>, "headers": {x-a2app-*, x-lui-*, idempotency-key as sent}}
  GET  /search   answers {"query": {name: value}}
  POST /refuse   answers 422 {"code": "no_room", "message": "the board is full"}
  POST /fail     answers 500 with a stack trace that must not reach callers
  GET  /slow     sleeps 3 s, then answers {}
  GET  /big      answers 2 MiB of JSON
  GET  /moved    answers 303 to /search
  GET  /cut      answers 200 with a content-length of 1000, sends 10 bytes and closes
  GET  /drop     closes the connection without answering
"""

import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROUTES = [
    {"method": "POST", "path": "/echo"},
    {"method": "GET", "path": "/search"},
    {"method": "POST", "path": "/refuse"},
    {"method": "POST", "path": "/fail"},
    {"method": "GET", "path": "/slow"},
    {"method": "GET", "path": "/big"},
    {"method": "GET", "path": "/moved"},
    {"method": "GET", "path": "/cut"},
    {"method": "GET", "path": "/drop"},
]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_routes":
            self.answer(200, ROUTES)
        elif url.path == "/search":
            self.answer(200, {"query": dict(urllib.parse.parse_qsl(url.query))})
        elif url.path == "/slow":
            time.sleep(3)
            self.answer(200, {})
        elif url.path == "/big":
            self.answer(200, {"data": "x" * (2 << 20)})
        elif url.path == "/moved":
            self.send_response(303)
            self.send_header("location", "/search")
            self.send_header("content-length", "0")
            self.end_headers()
        elif url.path == "/cut":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "1000")
            self.end_headers()
            self.wfile.write(b'{"done": tr')
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif url.path == "/drop":
            self.close_connection = True
            self.connection.shutdown(2)
        else:
            self.answer(404, {"message": "no such route"})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == "/echo":
            headers = {k.lower(): v for k, v in self.headers.items() if k.lower().startswith(("x-a2app-", "x-lui-", "idempotency-key"))}
            self.answer(200, {"body": json.loads(raw or b"null"), "headers": headers})
        elif self.path == "/refuse":
            self.answer(422, {"code": "no_room", "message": "the board is full"})
        elif self.path == "/fail":
            self.answer(500, {"trace": "Traceback: secret internals at /srv/app.py line 3"})
        else:
            self.answer(404, {"message": "no such route"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
