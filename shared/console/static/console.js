// Live updates for the ora console: the pages work without this script; it
// only refreshes what may change while you watch.
(function () {
  "use strict";
  var table = document.getElementById("waves");
  if (table && table.dataset.refresh) {
    setInterval(function () {
      fetch("/console/?" + table.dataset.refresh, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var body = document.getElementById("wave-rows");
          var tmp = document.createElement("tbody");
          tmp.innerHTML = html.replace(/^\s*<tbody[^>]*>|<\/tbody>\s*$/g, "");
          if (body && body.innerHTML !== tmp.innerHTML) body.innerHTML = tmp.innerHTML;
        })
        .catch(function () {});
    }, 2000);
  }
  var main = document.getElementById("main");
  if (main && main.dataset.live === "true") {
    // Running waves, approvals, metrics: reload the content unless the user
    // is typing in a form.
    setInterval(function () {
      var a = document.activeElement;
      if (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA")) return;
      fetch(location.href, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          var next = doc.getElementById("main");
          if (next) { main.innerHTML = next.innerHTML; main.dataset.live = next.dataset.live || "false"; }
        })
        .catch(function () {});
    }, 2000);
  }
})();
