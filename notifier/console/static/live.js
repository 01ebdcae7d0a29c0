// Live refresh of a console table: every N s (the #live element's data-every) fetch the tbody's
// data-source fragment and swap it in; paused while the tab is hidden; a lost session says so.
(function () {
  var status = document.getElementById("live");
  var body = document.querySelector("tbody[data-source]");
  if (!status || !body) return;
  var every = (parseInt(status.dataset.every, 10) || 5) * 1000;
  function stamp() { return new Date().toISOString().substring(11, 19) + " UTC"; }
  function refresh() {
    if (document.hidden) return;
    fetch(body.dataset.source, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (response.redirected || response.status === 401) throw new Error("logged out: reload to log in");
        if (!response.ok) throw new Error("refresh failed (" + response.status + ")");
        return response.text();
      })
      .then(function (html) { body.innerHTML = html; status.textContent = "live · updated " + stamp(); status.className = "muted"; })
      .catch(function (error) { status.textContent = error.message; status.className = "bad"; });
  }
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
})();
