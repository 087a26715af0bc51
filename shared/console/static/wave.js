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
  // Delegated, so it survives the live refresh of the page's content.
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a.node-link");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (select(a.dataset.key)) {
      e.preventDefault();
      var panel = document.getElementById("panel");
      if (panel && panel.getBoundingClientRect().top > window.innerHeight) panel.scrollIntoView({ block: "start" });
    }
  });
})();
