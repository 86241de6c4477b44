// Starts the first screen's biggest request while the app's code is still
// loading: opened on a suite's Charts (`#/charts/<suite>`), the page asks
// `attractor serve` for the suite's charts at once; ui/src/api.ts takes the
// answer over when the Charts screen asks for the same path. At 500 epochs
// the request then overlaps the ~200 ms the code takes to load and start.
// The desktop app reads through its shell, not over HTTP: nothing to do.
(function () {
  var route = /^#\/charts\/([^/?#]+)$/.exec(window.location.hash);
  if (!route || "__TAURI_INTERNALS__" in window) return;
  var token = new URLSearchParams(window.location.search).get("token") || sessionStorage.getItem("attractor.token");
  var path = "/suites/" + route[1] + "/charts";
  var preload = { path: path };
  // The body is read as it arrives — an unread answer (~0.5 MB at 500
  // epochs) stalls once the browser's buffer for it is full — and, unless
  // the app has already taken the request over, parsed at once: the main
  // thread is mostly idle then, waiting for the app's code to compile. The
  // Charts screen then draws it in its first render (api.ts, preloadedAnswer).
  preload.response = fetch("/api" + path, { headers: token ? { Authorization: "Bearer " + token } : {} }).then(function (r) {
    return r.text().then(function (text) {
      if (r.ok && window.__attractorPreload === preload) {
        try {
          preload.data = JSON.parse(text);
        } catch (e) {
          // Left to the app's own request, which reports it.
        }
      }
      return new Response(text || null, { status: r.status, statusText: r.statusText, headers: r.headers });
    });
  });
  window.__attractorPreload = preload;
})();
