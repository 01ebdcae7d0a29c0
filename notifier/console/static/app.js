// Every console page: register the service worker (static/sw.js) so that the console installs as an app
// and a pushed page shows even with the console closed.
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/console/sw.js", {scope: "/console/"}).catch(function () {});
}
