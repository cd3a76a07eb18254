#!/usr/bin/env python3
"""A scriptable HTTP(S) server on loopback for the push and fetch tests.

Each request takes the next action from the plan file (whitespace-separated,
rewritten without it; an empty plan means "200"), so a test can make the
server fail N times and then succeed, stall, or refuse:

  200, 204, 400, 401, 503, ...   answer with that status
  stall:S                         wait S seconds, then answer 200 (past a client timeout)
  trickle:S                       GET /files/NAME: its bytes spread over S seconds
  retry-after:CODE:S              answer CODE with "Retry-After: S"
  echo:CODE                       answer CODE with the request headers in the body
                                  (a server that leaks what it was sent); echoupper:CODE
                                  upper-cased, echojson:CODE JSON-escaped with '/' as '\/'


GET /files/NAME with a 2xx action serves NAME from --serve-dir. Every request
is logged as one JSON line (method, path, headers, body, action). The server
binds 127.0.0.1 on a free port, writes the port to --port-file, and exits by
itself after --lifetime seconds.
"""
import argparse
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


def next_action(plan_path):
    with LOCK:
        try:
            with open(plan_path) as f:
                words = f.read().split()
        except FileNotFoundError:
            words = []
        if not words:
            return "200"
        with open(plan_path, "w") as f:
            f.write(" ".join(words[1:]))
        return words[0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def _record(self, body, action):
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
            "action": action,
            "time": time.time(),
        }
        with LOCK:
            with open(self.server.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def _answer(self, code, body=b"", headers=None):
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client gave up (a stall past its timeout)

    def _handle(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        action = next_action(self.server.plan_path)
        self._record(body, action)
        if action.startswith("stall:"):
            time.sleep(float(action.split(":")[1]))
            self._answer(200, b"late\n")
        elif action.startswith("trickle:"):
            with open(os.path.join(self.server.serve_dir, os.path.basename(self.path)), "rb") as f:
                data = f.read()
            steps = 50
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for i in range(steps):
                    self.wfile.write(data[i * len(data) // steps:(i + 1) * len(data) // steps])
                    self.wfile.flush()
                    time.sleep(float(action.split(":")[1]) / steps)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
        elif action.startswith("retry-after:"):
            _, code, secs = action.split(":")
            self._answer(int(code), b"slow down\n", {"Retry-After": secs})
        elif action.startswith(("echo:", "echoupper:", "echojson:")):
            # the request headers back, as given, upper-cased or JSON-escaped ('/' as '\/')
            mode, code = action.split(":")
            dump = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            if mode == "echoupper":
                dump = dump.upper()
            elif mode == "echojson":
                dump = json.dumps(dump).replace("/", "\\/")
            self._answer(int(code), b"you sent:\n" + dump.encode())
        else:
            code = int(action)
            if self.command == "GET" and self.path.startswith("/files/") and code < 300:
                name = os.path.basename(self.path[len("/files/"):])
                path = os.path.join(self.server.serve_dir or "/nonexistent", name)
                if not os.path.isfile(path):
                    self._answer(404, b"no such file\n")
                    return
                with open(path, "rb") as f:
                    self._answer(code, f.read(), {"Content-Type": "application/octet-stream"})
                return
            self._answer(code, b"" if code == 204 else f"status {code}\n".encode())

    do_GET = do_POST = do_PUT = do_HEAD = _handle


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--serve-dir")
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    a = ap.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.plan_path, server.log_path, server.serve_dir = a.plan, a.log, a.serve_dir
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, a.port_file)
    threading.Timer(a.lifetime, server.shutdown).start()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
