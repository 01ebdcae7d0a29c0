// "Turn on pages on this device": ask for notifications, subscribe this browser with the notifier's
// VAPID key and hand the subscription to the notifier (POST /console/push/subscribe).
(function () {
  var button = document.getElementById("push-on");
  var status = document.getElementById("push-status");
  if (!button) return;
  function say(text) { status.textContent = text; }
  function key(base64url) {
    var text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((base64url.length + 3) % 4));
    return Uint8Array.from(text, function (c) { return c.charCodeAt(0); });
  }
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    button.disabled = true;
    say("This browser has no Web Push (on an iPhone: add the console to the home screen first).");
    return;
  }
  button.addEventListener("click", function () {
    say("Asking for permission…");
    Notification.requestPermission().then(function (permission) {
      if (permission !== "granted") throw new Error("notifications are blocked for this site: allow them in the browser's settings");
      return navigator.serviceWorker.register("/console/sw.js", {scope: "/console/"});
    }).then(function () {
      return navigator.serviceWorker.ready;
    }).then(function (registration) {
      return registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: key(button.dataset.key)});
    }).then(function (subscription) {
      var body = subscription.toJSON();
      body.device = navigator.userAgent;
      return fetch("/console/push/subscribe", {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-CSRF-Token": button.dataset.csrf}, body: JSON.stringify(body)});
    }).then(function (response) {
      if (!response.ok) return response.json().then(function (answer) { throw new Error(answer.error || response.status); });
      location.reload();
    }).catch(function (error) { say("Not turned on: " + error.message); });
  });
})();
