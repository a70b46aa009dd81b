#!/usr/bin/env python3
"""A loopback server that answers every POST with one recorded SSE body, for the benches.

Usage: scripts/sse-server.py BODY PORT_FILE [LAST_BYTE_FILE]

Writes the port it listens on to PORT_FILE. A POST to a path under /paced/ gets the body as a
model sends it, 64 KB every 4 ms (about a second for 17 MB), and then the time of its last
byte is written to LAST_BYTE_FILE; any other path gets it in one burst.
"""
import http.server
import sys
import time

body = open(sys.argv[1], "rb").read()
last_byte = sys.argv[3] if len(sys.argv) > 3 else None


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if not self.path.startswith("/paced/"):
            self.wfile.write(body)
            return
        for i in range(0, len(body), 65536):
            self.wfile.write(body[i:i + 65536])
            self.wfile.flush()
            time.sleep(0.004)
        if last_byte:
            open(last_byte, "w").write(repr(time.time()))

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(sys.argv[2], "w").write(str(server.server_address[1]))
server.serve_forever()
