#!/usr/bin/env python3
"""Open ppbench reports in headless Chromium and check what a reviewer would see.

Drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
NUL-separated JSON on fds 3 and 4), so nothing beyond the Python standard
library is needed. For each page: the verdict banner, every case row, every
chart actually laid out with a non-empty drawing, no script/img/iframe and no
event-handler attribute anywhere, no console message, exception or failed
load; then a full-page screenshot.

usage: report_browser.py CHROMIUM SPEC.json
SPEC: {"screenshot_dir": DIR, "pages": [{"name", "path", "verdict" (or a list), "cases": [keys],
       "charts": "all" | "none", "label": text expected in the run label or null}]}
Exit 0 when every check holds; 1 with one line per failure otherwise.
"""
import base64
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile

PROBE = r"""
(() => {
  const q = (s) => Array.from(document.querySelectorAll(s));
  const withHandler = q('*').filter(el => Array.from(el.attributes).some(a => /^on/i.test(a.name)));
  const figures = q('figure.chart').map(fig => {
    const svg = fig.querySelector('svg');
    if (!svg) return {name: fig.dataset.chart, svg: false};
    const box = svg.getBoundingClientRect();
    const drawn = svg.getBBox();
    return {name: fig.dataset.chart, svg: true, width: box.width, height: box.height,
            drawnWidth: drawn.width, drawnHeight: drawn.height,
            shapes: svg.querySelectorAll('path, rect, circle, use, polygon').length};
  });
  const header = document.querySelector('header.banner');
  const label = document.querySelector('.run-label');
  return JSON.stringify({
    title: document.title,
    verdict: (document.getElementById('verdict') || {}).textContent || null,
    headerPosition: header ? getComputedStyle(header).position : null,
    caseKeys: q('tr.case').map(r => r.dataset.caseKey),
    figures: figures,
    missingCharts: q('.chart-missing').length,
    noGnuplotNotice: !!document.getElementById('no-gnuplot'),
    forbidden: q('script, img, iframe, object, embed, link, base, form').map(e => e.tagName),
    handlers: withHandler.map(e => e.tagName),
    label: label ? label.textContent : null,
    tocLinks: q('nav.toc a').length,
    brokenAnchors: q('a[href^="#"]').map(a => a.getAttribute('href'))
        .filter(h => !document.getElementById(decodeURIComponent(h.slice(1)))),
    height: Math.ceil(document.documentElement.scrollHeight),
  });
})()
"""


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="ppb-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def wire():
            # In the child: fd 3 reads our commands, fd 4 carries replies. The pipe
            # ends may themselves be 3 or 4, so move them out of the way first.
            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(r, 3)   # dup2 clears close-on-exec on 3 and 4 only
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "--window-size=1400,1000", "about:blank"],
            close_fds=False, preexec_fn=wire,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)

    def _send(self, method, params, session):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _receive(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=False):
        wanted = self._send(method, params, session)
        while True:
            msg = self._receive()
            if msg.get("id") == wanted:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def load(self, url):
        self.events = []
        self.call("Page.navigate", {"url": url}, session=True)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive())

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError("probe failed: %s" % result["exceptionDetails"])
        return result["result"]["value"]

    def screenshot(self, path, height):
        height = max(600, min(height, 16000))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)
        shot = self.call("Page.captureScreenshot",
                         {"format": "png", "captureBeyondViewport": True,
                          "clip": {"x": 0, "y": 0, "width": 1400, "height": height, "scale": 1}},
                         session=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        self.call("Emulation.clearDeviceMetricsOverride", session=True)

    def console_problems(self):
        problems = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                problems.append("console.%s: %s" % (p.get("type"), text))
            elif method == "Runtime.exceptionThrown":
                problems.append("exception: %s" % p.get("exceptionDetails", {}).get("text"))
            elif method == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                entry = p["entry"]
                problems.append("log %s (%s): %s %s" % (entry.get("level"), entry.get("source"),
                                                        entry.get("text"), entry.get("url", "")))
        return problems

    def close(self):
        try:
            self._send("Browser.close", None, False)
            self.proc.wait(timeout=15)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.profile], check=False)


def check_page(browser, page, shot_dir):
    failures = []
    fail = lambda msg: failures.append("%s: %s" % (page["name"], msg))
    browser.load("file://" + os.path.abspath(page["path"]))
    info = json.loads(browser.evaluate(PROBE))

    allowed = page["verdict"] if isinstance(page["verdict"], list) else [page["verdict"]]
    if info["verdict"] not in allowed:
        fail("verdict banner says %r, expected %s" % (info["verdict"], " or ".join(allowed)))
    if info["headerPosition"] != "sticky":
        fail("the verdict header is not sticky (%r)" % info["headerPosition"])
    shown = info["caseKeys"]
    missing = [k for k in page["cases"] if k not in shown]
    if missing:
        fail("%d cases have no row, e.g. %r" % (len(missing), missing[0]))
    if len(shown) < len(page["cases"]):
        fail("%d case rows for %d cases" % (len(shown), len(page["cases"])))
    if info["forbidden"]:
        fail("active or external elements in the page: %s" % sorted(set(info["forbidden"])))
    if info["handlers"]:
        fail("event-handler attributes on: %s" % sorted(set(info["handlers"])))
    if info["brokenAnchors"]:
        fail("links to missing anchors: %s" % info["brokenAnchors"][:5])
    if info["tocLinks"] < 3:
        fail("table of contents has %d links" % info["tocLinks"])
    if page.get("label") is not None and info["label"] != page["label"]:
        fail("run label shown as %r, expected the text %r" % (info["label"], page["label"]))

    figures = info["figures"]
    if page["charts"] == "all":
        if not figures:
            fail("no chart in the page")
        if info["missingCharts"]:
            fail("%d charts not drawn" % info["missingCharts"])
        for fig in figures:
            if not fig["svg"]:
                fail("chart %s has no svg" % fig["name"])
            elif fig["width"] < 200 or fig["height"] < 100:
                fail("chart %s laid out at %.0fx%.0f px" % (fig["name"], fig["width"], fig["height"]))
            elif fig["drawnWidth"] < 50 or fig["drawnHeight"] < 50 or fig["shapes"] < 5:
                fail("chart %s draws nothing (%.0fx%.0f, %d shapes)" % (
                    fig["name"], fig["drawnWidth"], fig["drawnHeight"], fig["shapes"]))
    else:
        if not info["noGnuplotNotice"]:
            fail("no notice that gnuplot is missing")
        if any(f["svg"] for f in figures):
            fail("charts drawn although gnuplot was missing")

    for problem in browser.console_problems():
        fail(problem)
    shot = os.path.join(shot_dir, page["name"] + ".png")
    browser.screenshot(shot, info["height"])
    if os.path.getsize(shot) < 10000:
        fail("screenshot %s is suspiciously small" % shot)
    print("%s: verdict %s, %d case rows, %d charts, screenshot %s" % (
        page["name"], info["verdict"], len(shown), len(figures), shot))
    return failures


def main():
    chromium, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    signal.alarm(120)   # a hung browser fails the test instead of hanging it
    os.makedirs(spec["screenshot_dir"], exist_ok=True)
    browser = Browser(chromium)
    failures = []
    try:
        for page in spec["pages"]:
            failures += check_page(browser, page, spec["screenshot_dir"])
    finally:
        browser.close()
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
