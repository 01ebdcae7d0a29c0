// Live refresh of console pages, every N s (the #live element's data-every), paused while the tab is
// hidden; a lost session says so.
// - a list: fetch the tbody's data-source fragment and swap it in;
// - an incident: fetch its data-version and, when someone else changed the incident, offer a reload
//   (never reload by itself: a note being typed stays).
(function () {
  var status = document.getElementById("live");
  if (!status) return;
  var body = document.querySelector("tbody[data-source]");
  var every = (parseInt(status.dataset.every, 10) || 5) * 1000;
  function stamp() { return new Date().toISOString().substring(11, 19) + " UTC"; }
  function get(url) {
    return fetch(url, {credentials: "same-origin"}).then(function (response) {
      if (response.redirected || response.status === 401) throw new Error("logged out: reload to log in");
      if (!response.ok) throw new Error("refresh failed (" + response.status + ")");
      return response.text();
    });
  }
  function say(text, className) { status.textContent = text; status.className = className; }
  function changed() {
    status.textContent = "changed by someone else: ";
    var link = document.createElement("a");
    link.href = location.pathname;
    link.textContent = "reload";
    status.appendChild(link);
    status.className = "warn";
  }
  function refresh() {
    if (document.hidden) return;
    if (body) {
      get(body.dataset.source)
        .then(function (html) { body.innerHTML = html; say("live · updated " + stamp(), "muted"); })
        .catch(function (error) { say(error.message, "bad"); });
    } else if (status.dataset.version) {
      get(status.dataset.version)
        .then(function (version) {
          if (version.trim() !== status.dataset.current) changed(); else say("live · checked " + stamp(), "muted");
        })
        .catch(function (error) { say(error.message, "bad"); });
    }
  }
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
})();
