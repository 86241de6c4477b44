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
  window.__attractorPreload = {
    path: path,
    response: fetch("/api" + path, { headers: token ? { Authorization: "Bearer " + token } : {} }),
  };
})();
