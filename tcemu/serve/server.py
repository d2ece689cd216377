"""The HTTP side of `tcemu serve`: the page, its static files and the JSON API, on the loopback interface only.

Requests are bounded: a request line and headers as http.server bounds them, a body of at most MAX_BODY bytes
whose JSON integers have at most MAX_DIGITS digits, a socket timeout for slow clients, at most MAX_RUNNING API
computations at once (each bounded by its view's own limits, and answered 503 after REQUEST_SECONDS whatever
it does; a request waits at most that long for a free slot, so a slow one never blocks the others), a Host
header that must name the loopback address (no DNS rebinding onto the API), and an Origin header, where a
POST carries one, that must be this server's own (no cross-site requests from other pages).
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qsl, urlsplit

from ..core.errors import TcemuError
from .api import FIELDS, VIEWS
from .params import ServeError
from .ptxrun import PTX_FIELDS, ptx_view

MAX_BODY = 256 * 1024
HOSTS = ("127.0.0.1", "localhost")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
_API = dict(VIEWS, ptx=ptx_view)
API_FIELDS = dict(FIELDS, ptx=PTX_FIELDS)
MAX_RUNNING = 2          # API computations at once (each in its own thread)
REQUEST_SECONDS = 20.0   # the longest a request waits for a slot, and then for its computation
MAX_DIGITS = 30          # digits of one JSON integer (a 64-bit value has 20)
_SLOTS = threading.BoundedSemaphore(MAX_RUNNING)


class _BadJson(ValueError):
    pass


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _BadJson(f"an integer of {len(text.lstrip('-'))} digits; at most {MAX_DIGITS}")
    return int(text)


def _json_constant(name: str):
    raise _BadJson(f"{name} is not JSON")


def parse_body(raw: bytes):
    """The request's JSON, integers bounded (Python's own int parsing would take quadratic time on a long
    one, or refuse it past 4,300 digits with a ValueError json does not expect)."""
    return json.loads(raw.decode("utf-8"), parse_int=_json_int, parse_constant=_json_constant)


def static_files() -> dict:
    """{name: bytes} of the page's files (tcemu/serve/static, package data)."""
    root = resources.files("tcemu.serve") / "static"
    return {f.name: f.read_bytes() for f in root.iterdir() if f.is_file() and not f.name.startswith(".")}


def call(view: str, fields) -> tuple:
    """(HTTP status, JSON-ready body) of one API request: 200 and the view's data; 400 and
    {"error": {"type", "field", "rule", "message"}} for bad input; 404 for an unknown view."""
    fn = _API.get(view)
    if fn is None:
        return 404, {"error": {"type": "NotFound", "field": "view", "rule": f"{view!r}: expected one of "
                                                                          f"{', '.join(_API)}",
                               "message": f"no view {view!r}"}}
    if not _SLOTS.acquire(timeout=REQUEST_SECONDS):
        return 503, {"error": {"type": "Busy", "field": "request", "rule": f"{MAX_RUNNING} requests are running; "
                               f"none ended within {REQUEST_SECONDS:g} s", "message": "server busy"}}
    result = []

    def work():
        try:
            result.append(_compute(view, fn, fields))
        finally:
            _SLOTS.release()
    worker = threading.Thread(target=work, name=f"tcemu-serve-{view}", daemon=True)
    worker.start()
    worker.join(REQUEST_SECONDS)
    if not result:  # still computing: it keeps its slot until it ends (its view bounds it), the client is answered
        return 503, {"error": {"type": "Timeout", "field": "request", "rule": f"took more than {REQUEST_SECONDS:g} s",
                               "message": f"request: took more than {REQUEST_SECONDS:g} s"}}
    return result[0]


def _compute(view, fn, fields) -> tuple:
    try:
        return 200, fn(fields)
    except TcemuError as e:
        return 400, {"error": {"type": type(e).__name__, "field": e.field, "rule": e.rule, "message": str(e)}}
    except RecursionError:
        return 400, {"error": {"type": "ServeError", "field": "request", "rule": "input nested too deeply",
                               "message": "request: input nested too deeply"}}
    except Exception as e:  # a bug in tcemu: say so without a traceback (the server's stderr keeps one line)
        print(f"tcemu serve: internal error in {view}: {type(e).__name__}: {e}", file=sys.stderr)
        return 500, {"error": {"type": "InternalError", "field": "", "rule": f"{type(e).__name__} inside tcemu "
                               "(please report it with this page's URL)", "message": "internal error"}}


class Handler(BaseHTTPRequestHandler):
    server_version = "tcemu"
    timeout = 15           # seconds a client may take to send its request
    files: dict = {}
    quiet = False

    def log_message(self, fmt, *args):
        if not self.quiet:
            super().log_message(fmt, *args)

    def _send(self, status: int, body: bytes, ctype: str, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        if ctype.startswith("text/html"):
            # everything the page loads comes from this server; nothing from the internet
            self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
                                                        "style-src 'self'; script-src 'self'")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj):
        self._send(status, json.dumps(obj, separators=(",", ":"), allow_nan=False).encode(),
                   "application/json; charset=utf-8")

    def _error(self, status: int, field: str, rule: str):
        self._json(status, {"error": {"type": "ServeError", "field": field, "rule": rule,
                                      "message": f"{field}: {rule}"}})

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        if host in HOSTS:
            return True
        self._error(403, "Host", f"{host!r}: this server answers requests to 127.0.0.1 or localhost only")
        return False

    def _own_origins(self):
        port = self.server.server_address[1]
        return {f"http://{h}:{port}" for h in HOSTS}

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if not self._host_ok():
            return
        url = urlsplit(self.path)
        path = url.path
        if path.startswith("/api/"):
            try:
                fields = dict(parse_qsl(url.query, keep_blank_values=True, strict_parsing=False,
                                        max_num_fields=64))
            except ValueError as e:
                return self._error(400, "query", str(e))
            return self._json(*call(path[5:], fields))
        if path in ("/", "/index.html"):
            return self._send(200, self.files["index.html"], _TYPES[".html"])
        if path.startswith("/static/"):
            name = path[len("/static/"):]
            if name in self.files:  # only the package's own files, by exact name
                return self._send(200, self.files[name], _TYPES.get(name[name.rfind("."):], "application/octet-stream"))
        if path == "/favicon.ico":
            return self._send(204, b"", "image/x-icon")
        self._error(404, "path", f"{path[:80]!r} is not a page of tcemu serve")

    def do_POST(self):
        if not self._host_ok():
            return
        path = urlsplit(self.path).path
        if not path.startswith("/api/"):
            return self._error(404, "path", "POST goes to /api/<view>")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._error(411, "Content-Length", "a POST needs a Content-Length")
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True
            return self._error(413, "body", f"{length} bytes; at most {MAX_BODY}")
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self._own_origins():  # "null" (sandboxed pages) too
            self.close_connection = True
            return self._error(403, "Origin", f"{origin[:100]!r}: POSTs come from this server's own page only")
        try:
            fields = parse_body(self.rfile.read(length)) if length else {}
        except _BadJson as e:
            return self._error(400, "body", str(e))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
            return self._error(400, "body", f"not a JSON object ({type(e).__name__})")
        if not isinstance(fields, dict):
            return self._error(400, "body", "must be a JSON object of fields")
        self._json(*call(path[5:], fields))


def make_server(port: int = 0, quiet: bool = False) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:port (0: any free port); serve_forever() runs it."""
    handler = type("TcemuHandler", (Handler,), {"files": static_files(), "quiet": quiet})
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        raise ServeError("port", f"{port}: cannot listen on 127.0.0.1 ({e.strerror})") from None
    server.daemon_threads = True
    return server


def serve(port: int = 8765, quiet: bool = False) -> None:
    server = make_server(port, quiet)
    host, actual = server.server_address[:2]
    print(f"tcemu serve: http://{host}:{actual}/  (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

