"""Headless Chromium driven over the DevTools protocol, with the standard library only (a minimal websocket
client): navigate, evaluate JavaScript, type, move the mouse, take screenshots. For the page tests of
`tcemu serve` (tests/serve/test_page.py); Debian's `chromium` package provides the browser.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         "--force-device-scale-factor=1"]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _WebSocket:
    """Just enough of RFC 6455 for a DevTools connection: masked text frames out, unmasked frames in."""

    def __init__(self, url: str, timeout: float = 30.0):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"websocket handshake refused: {status!r}")
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text: str):
        data = text.encode()
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(data)))

    def recv(self) -> str:
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if op == 0x9:  # ping: answer, keep reading
                continue
            if op in (0x1, 0x0):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def png_pixels(png: bytes):
    """Rows of (r, g, b) of an 8-bit RGB or RGBA PNG (all five row filters; enough for screenshots)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, out, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for r in range(h):
        f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return out


class Browser:
    """One headless Chromium with one page; `exceptions` collects uncaught page errors, `requests` the URLs
    the page fetched."""

    def __init__(self, width: int = 1400, height: int = 1000):
        path = find_chromium()
        if path is None:
            raise RuntimeError("no chromium on PATH")
        self.profile = tempfile.mkdtemp(prefix="tcemu-chromium-")
        self.proc = subprocess.Popen([path, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                                      f"--window-size={width},{height}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        self.ws = _WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0
        self.exceptions = []
        self.requests = []  # every URL the page asked for
        self.send("Page.enable")
        self.send("Network.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def send(self, method: str, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Runtime.exceptionThrown":
                self.exceptions.append(msg["params"]["exceptionDetails"])
            elif msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr: str):
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def wait(self, expr: str, timeout: float = 20.0):
        """Poll until the JavaScript expression is truthy; return its value (errors count as not yet)."""
        deadline = time.time() + timeout
        while True:
            try:
                v = self.eval(expr)
            except RuntimeError as e:  # e.g. between two documents while navigating
                v, last = None, e
            else:
                last = None
            if v:
                return v
            if time.time() > deadline:
                raise TimeoutError(f"waited {timeout} s for {expr}" + (f" ({last})" if last else ""))
            time.sleep(0.05)

    def goto(self, url: str, ready: str = "document.documentElement.dataset.ready === '1'"):
        self.send("Page.navigate", url=url)
        self.wait(f"document.readyState === 'complete' && ({ready})")

    def click(self, x: float, y: float):
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def hover(self, x: float, y: float):
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def type_into(self, selector: str, text: str):
        """Focus the field, select what it holds, and type `text` as keyboard input."""
        self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select(); }})()")
        self.send("Input.insertText", text=text)

    def screenshot(self, path: str, clip=None):
        params = {"format": "png"}
        if clip:
            params["clip"] = dict(zip(("x", "y", "width", "height"), clip), scale=1)
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def pixel(self, x: float, y: float):
        """(r, g, b) of the rendered page at client point (x, y): a 1 x 1 screenshot there, decoded (the clip
        is in page coordinates: the scroll offset is added)."""
        sx, sy = self.eval("[window.scrollX, window.scrollY]")
        x, y = x + sx, y + sy
        data = self.send("Page.captureScreenshot", format="png",
                         clip={"x": x, "y": y, "width": 1, "height": 1, "scale": 1})["data"]
        return png_pixels(base64.b64decode(data))[0][0]

    def close(self):
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
