// The wave page's side panel: clicking a state shows its input and output
// without a reload. Without this script each state is a link (?state=NAME)
// and the server renders the panel for it.
(function () {
  "use strict";
  function select(key) {
    var found = false;
    document.querySelectorAll(".state-panel").forEach(function (p) {
      var on = p.dataset.state === key;
      p.hidden = !on;
      found = found || on;
    });
    if (!found) return false;
    document.querySelectorAll("g.node").forEach(function (g) {
      g.classList.toggle("selected", g.dataset.state === key);
    });
    var u = new URL(location.href);
    u.searchParams.set("state", key);
    u.hash = "";
    history.replaceState(null, "", u);
    return true;
  }
  // An opened child stays open across the live refresh: the address says
  // which (?expand=NAME), as a link without the script does.
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (!d.classList || !d.classList.contains("child") || !d.open) return;
    var u = new URL(location.href);
    u.searchParams.set("expand", d.id.replace(/^child-/, ""));
    history.replaceState(null, "", u);
  }, true);
  // Delegated, so it survives the live refresh of the page's content.
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a.node-link");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (select(a.dataset.key)) {
      e.preventDefault();
      if (a.dataset.child) {
        var d = document.getElementById("child-" + a.dataset.child);
        if (d) d.open = true;
      }
      var panel = document.getElementById("panel");
      if (panel && panel.getBoundingClientRect().top > window.innerHeight) panel.scrollIntoView({ block: "start" });
    }
  });
})();
