// Live updates for the ora console: the pages work without this script; it
// only refreshes what may change while you watch. Polling pauses while the
// tab is hidden and slows down while nothing changes (2 s, up to 16 s).
(function () {
  "use strict";
  var FAST = 2000, SLOW = 16000;

  // poll calls refresh(done) every FAST ms while the tab is visible;
  // refresh calls done(changed), and unchanged content doubles the wait.
  function poll(refresh) {
    var wait = FAST, timer = null;
    function schedule() {
      clearTimeout(timer);
      timer = null;
      if (document.visibilityState === "hidden") return; // resumed by visibilitychange
      timer = setTimeout(tick, wait);
    }
    function tick() {
      refresh(function (changed) {
        wait = changed ? FAST : Math.min(wait * 2, SLOW);
        schedule();
      });
    }
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "hidden") {
        clearTimeout(timer);
        timer = null;
      } else {
        wait = FAST;
        tick(); // catch up at once
      }
    });
    schedule();
  }

  var table = document.getElementById("waves");
  if (table && table.dataset.refresh) {
    poll(function (done) {
      fetch("/console/?" + table.dataset.refresh, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return done(false);
          var body = document.getElementById("wave-rows");
          var tmp = document.createElement("tbody");
          tmp.innerHTML = html.replace(/^\s*<tbody[^>]*>|<\/tbody>\s*$/g, "");
          var changed = body && body.innerHTML !== tmp.innerHTML;
          if (changed) body.innerHTML = tmp.innerHTML;
          done(changed);
        })
        .catch(function () { done(false); });
    });
  }
  var main = document.getElementById("main");
  if (main && main.dataset.live === "true") {
    // Running waves, approvals, metrics: reload the content unless the user
    // is typing in a form.
    poll(function (done) {
      var a = document.activeElement;
      if (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA")) return done(false);
      if (main.dataset.live !== "true") return done(false);
      fetch(location.href, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return done(false);
          var doc = new DOMParser().parseFromString(html, "text/html");
          var next = doc.getElementById("main");
          var changed = next && next.innerHTML !== main.innerHTML;
          if (changed) { main.innerHTML = next.innerHTML; main.dataset.live = next.dataset.live || "false"; }
          done(changed);
        })
        .catch(function () { done(false); });
    });
  }
})();
