// The console's service worker: shows each page pushed by the notifier (Web Push, its JSON: title, body,
// status, incident, tag, url) and, on a tap, opens that incident in a console window (Acknowledge is its
// first button). Registered for /console/ by every console page (static/app.js).
self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

function pageOf(data) {
  if (!data) return {};
  try { return data.json(); } catch (error) { return {title: "vigil page", body: data.text()}; }
}

function showPage(page) {
  var firing = page.status === "firing";
  return self.registration.showNotification(page.title || "vigil page", {
    body: page.body || "",
    tag: page.tag || "vigil",
    renotify: true,
    requireInteraction: firing,  // a firing page stays until someone looks at it
    icon: "/console/static/icon-192.png",
    data: {url: page.url || "/console/incidents", incident: page.incident || null},
    actions: firing ? [{action: "open", title: "Open to acknowledge"}] : []
  });
}

// a tap (or the "open" action): the incident in a console window already open, else a new one
function openIncident(notification) {
  notification.close();
  var url = new URL((notification.data && notification.data.url) || "/console/incidents", self.location.origin).href;
  return self.clients.matchAll({type: "window", includeUncontrolled: true}).then(function (windows) {
    var open = windows.find(function (client) { return new URL(client.url).pathname.indexOf("/console/") === 0; });
    if (!open) return self.clients.openWindow(url);
    return open.navigate(url).then(function (client) {
      var shown = client || open;
      return shown.focus ? shown.focus().catch(function () { return shown; }) : shown;
    });
  });
}

self.addEventListener("push", function (event) { event.waitUntil(showPage(pageOf(event.data))); });
self.addEventListener("notificationclick", function (event) { event.waitUntil(openIncident(event.notification)); });
