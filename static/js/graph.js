/*
 * The graph explorer (memories/templates/memories/graph.html).
 *
 * Draws /graph/data/ with cytoscape (served from node_modules by staticfiles), expands a node's neighbours when
 * it is tapped, and loads the memories behind a node or an edge into the side panel with htmx. The page never
 * holds more than data-max-nodes nodes, and says so when it leaves some out.
 *
 * CSP: this file is loaded with the page's nonce; it sets no inline styles or handlers. Entity names reach the
 * DOM only as textContent (status line) or inside cytoscape's canvas; the side panel is server-rendered HTML.
 */
(function () {
  "use strict";
  // Words come from Django's JavaScript catalogue (base.html loads it first); without it, English.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => values[key]));

  const root = document.getElementById("graph-canvas");
  if (!root || typeof window.cytoscape !== "function") {
    return;
  }

  const PLACEHOLDER = "00000000-0000-0000-0000-000000000000";
  const MAX_NODES = Number(root.dataset.maxNodes) || 300;
  const ANIMATE_BELOW = 120; // larger graphs lay out without animation to stay responsive
  const MAX_ZOOM = 4;
  const COMFORTABLE_ZOOM = 1.3; // fitting a small graph to the canvas would otherwise show giant labels
  const EDGE_LABELS_BELOW = 60; // relation names on every edge only while they stay readable
  const FONT = 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "PingFang SC", sans-serif';

  const form = document.getElementById("graph-controls");
  const status = document.getElementById("graph-status");
  const panel = document.getElementById("graph-panel");
  const legendButtons = Array.from(document.querySelectorAll(".graph-legend .legend-item"));

  // Cytoscape prepends a <style> element to <head> unless an element with this id already exists. An inline
  // <style> breaks `style-src 'self'`, so claim the id with an inert element; app.css carries the one rule it
  // would have added (its container class gets position: relative).
  const CYTOSCAPE_STYLESHEET_ID = "__________cytoscape_stylesheet";
  if (!document.getElementById(CYTOSCAPE_STYLESHEET_ID)) {
    const marker = document.createElement("meta");
    marker.id = CYTOSCAPE_STYLESHEET_ID;
    document.head.appendChild(marker);
  }

  // Node colours live in app.css (the legend swatches), so the legend and the canvas cannot disagree.
  const colours = {};
  for (const button of legendButtons) {
    const swatch = button.querySelector(".swatch");
    colours[button.dataset.type] = swatch ? getComputedStyle(swatch).backgroundColor : "#9ca3af";
  }
  const hiddenTypes = new Set();

  const url = (template, id) => template.replace(PLACEHOLDER, encodeURIComponent(id));

  function say(text, tone) {
    status.textContent = text;
    status.classList.toggle("is-capped", tone === "capped");
    status.classList.toggle("is-error", tone === "error");
  }

  const cy = window.cytoscape({
    container: root,
    elements: [],
    minZoom: 0.1,
    maxZoom: MAX_ZOOM,
    boxSelectionEnabled: false,
    style: [
      {
        selector: "node",
        style: {
          "background-color": "data(color)",
          label: "data(label)",
          width: "mapData(frequency, 1, 12, 18, 46)",
          height: "mapData(frequency, 1, 12, 18, 46)",
          "font-family": FONT,
          "font-size": 12,
          color: "#1d2330",
          "text-valign": "bottom",
          "text-margin-y": 4,
          "text-outline-color": "#ffffff",
          "text-outline-width": 2,
          "min-zoomed-font-size": 7,
          "border-width": 1,
          "border-color": "#ffffff",
        },
      },
      { selector: "node.expanded", style: { "border-width": 3, "border-color": "#93c5fd" } },
      { selector: "node.match", style: { "border-width": 3, "border-color": "#f59e0b" } },
      { selector: "node:selected", style: { "border-width": 4, "border-color": "#111827" } },
      {
        selector: "edge",
        style: {
          width: "mapData(strength, 0, 1, 1, 5)",
          "line-color": "#c3cad6",
          "target-arrow-color": "#c3cad6",
          "target-arrow-shape": "triangle",
          "arrow-scale": 0.8,
          "curve-style": "bezier",
          "font-family": FONT,
          "font-size": 9,
          color: "#667085",
          "text-rotation": "autorotate",
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.85,
          "text-background-padding": 1,
        },
      },
      { selector: "edge.labelled, edge:selected", style: { label: "data(type)" } },
      {
        selector: "edge:selected",
        style: { "line-color": "#3056d3", "target-arrow-color": "#3056d3", color: "#1d2330" },
      },
      { selector: ".type-hidden", style: { display: "none" } },
    ],
  });
  window.mnemoGraph = cy; // the browser test (and a curious developer's console) reads the graph here

  function nodeElement(node, position) {
    const element = {
      group: "nodes",
      data: {
        id: node.id,
        label: node.label,
        type: node.type,
        typeLabel: node.type_label,
        frequency: node.frequency,
        match: Boolean(node.match),
        color: colours[node.type] || colours.OTHER || "#9ca3af",
      },
      classes: hiddenTypes.has(node.type) ? ["type-hidden"] : [],
    };
    if (position) {
      element.position = position;
    }
    return element;
  }

  function edgeElements(edges) {
    return edges
      .filter((edge) => cy.getElementById(edge.id).empty())
      .filter((edge) => !cy.getElementById(edge.source).empty() && !cy.getElementById(edge.target).empty())
      .map((edge) => ({
        group: "edges",
        data: {
          id: edge.id,
          source: edge.source,
          target: edge.target,
          type: edge.type,
          strength: edge.strength,
          frequency: edge.frequency,
        },
      }));
  }

  let layout = null;
  function runLayout(randomize) {
    if (layout) {
      layout.stop(); // its layoutstop handler runs now, so the state below is the new layout's
    }
    root.dataset.state = "layout";
    cy.edges().toggleClass("labelled", cy.nodes().length < EDGE_LABELS_BELOW);
    const animate = cy.nodes().length < ANIMATE_BELOW;
    layout = cy.layout({
      name: cy.nodes().length > 1 ? "cose" : "grid",
      animate: animate,
      animationDuration: 400,
      randomize: randomize, // a fresh graph starts from scratch; an expansion keeps what the reader has seen
      fit: true,
      padding: 30,
      nodeDimensionsIncludeLabels: true,
      nodeRepulsion: () => 400000,
      nodeOverlap: 10,
      idealEdgeLength: () => 100,
      edgeElasticity: () => 100,
      gravity: 80,
      componentSpacing: 60,
      numIter: cy.nodes().length > 150 ? 600 : 1000,
      initialTemp: randomize ? 200 : 60, // an expansion only settles the new nodes in
      coolingFactor: 0.95,
    });
    // Fitting honours maxZoom: cap it while the layout fits the graph, then let the reader zoom in further.
    cy.maxZoom(COMFORTABLE_ZOOM);
    layout.one("layoutstop", () => {
      cy.maxZoom(MAX_ZOOM);
      root.dataset.state = "ready";
    });
    layout.run();
  }

  async function getJSON(address) {
    const response = await fetch(address, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (response.status === 401) {
      throw new Error(gettext("Your session has ended: reload the page and log in again."));
    }
    if (!response.ok) {
      let detail = "";
      try {
        detail = (await response.json()).detail || "";
      } catch (error) {
        detail = "";
      }
      throw new Error(
        interpolate(gettext("The graph could not be loaded (%(status)s)."), { status: `${response.status}${detail ? ": " + detail : ""}` }, true)
      );
    }
    return response.json();
  }

  function formValue(name) {
    const field = form.elements.namedItem(name);
    return field ? field.value.trim() : "";
  }

  // --- the whole graph for the search and type filter ---------------------------------------------------------

  let loadToken = 0;
  async function load() {
    const token = ++loadToken;
    const query = new URLSearchParams({ limit: String(MAX_NODES) });
    if (formValue("q")) {
      query.set("q", formValue("q"));
    }
    if (formValue("type")) {
      query.set("type", formValue("type"));
    }
    root.dataset.state = "loading";
    say(gettext("Loading the graph…"));
    let data;
    try {
      data = await getJSON(`${root.dataset.dataUrl}?${query}`);
    } catch (error) {
      if (token === loadToken) {
        root.dataset.state = "error";
        say(error.message, "error");
      }
      return;
    }
    if (token !== loadToken) {
      return; // a newer search has started; its answer wins
    }
    cy.elements().remove();
    cy.add(data.nodes.map((node) => nodeElement(node)));
    cy.add(edgeElements(data.edges));
    if (data.nodes.length === 0) {
      root.dataset.state = "ready";
      say(formValue("q") ? interpolate(gettext("No entity matches “%(query)s”."), { query: formValue("q") }, true) : gettext("No entity of this type yet."));
      return;
    }
    cy.nodes().filter((node) => node.data("match")).addClass("match");
    if (data.capped) {
      say(data.message, "capped");
    } else if (formValue("q") && data.neighbours) {
      say(
        interpolate(
          ngettext(
            "Found %(shown)s entity matching “%(query)s”, drawn with %(neighbours)s neighbours. Click an entity to expand it.",
            "Found %(shown)s entities matching “%(query)s”, drawn with %(neighbours)s neighbours. Click an entity to expand it.",
            data.shown
          ),
          { shown: data.shown, query: formValue("q"), neighbours: data.neighbours },
          true
        )
      );
    } else {
      const relations = data.edges.length;
      say(
        interpolate(
          gettext("Showing %(shown)s entities and %(relations)s relations. Click an entity to expand it."),
          { shown: data.shown, relations: relations },
          true
        )
      );
    }
    runLayout(true);
  }

  // --- expand on tap --------------------------------------------------------------------------------------------

  async function expand(node) {
    const depth = formValue("depth") || "1";
    let data;
    try {
      data = await getJSON(`${url(root.dataset.neighborsUrl, node.id())}?depth=${encodeURIComponent(depth)}`);
    } catch (error) {
      say(error.message, "error");
      return;
    }
    if (node.removed()) {
      return; // a new search replaced the graph meanwhile
    }
    const centre = node.position();
    const fresh = data.nodes.filter((neighbour) => cy.getElementById(neighbour.id).empty());
    const room = Math.max(0, MAX_NODES - cy.nodes().length);
    const added = fresh.slice(0, room);
    const leftOut = fresh.length - added.length + (data.truncated ? 1 : 0);
    cy.add(
      added.map((neighbour, index) => {
        // Start the new nodes on a small circle around the tapped one, so the layout grows from there.
        const angle = (2 * Math.PI * index) / Math.max(added.length, 1);
        return nodeElement(neighbour, { x: centre.x + 60 * Math.cos(angle), y: centre.y + 60 * Math.sin(angle) });
      })
    );
    const newEdges = edgeElements(data.edges);
    cy.add(newEdges);
    node.addClass("expanded");
    const name = node.data("label");
    const hops = depth === "1" ? "1 hop" : `${depth} hops`;
    if (leftOut > 0) {
      const notDrawn = data.truncated ? interpolate(gettext("more than %(n)s"), { n: leftOut }, true) : `${leftOut}`;
      say(
        (added.length
          ? interpolate(gettext("Added %(added)s neighbours of %(name)s (%(hops)s); %(left)s more not drawn"), { added: added.length, name: name, hops: hops, left: notDrawn }, true)
          : interpolate(gettext("%(left)s neighbours of %(name)s (%(hops)s) not drawn"), { left: notDrawn, name: name, hops: hops }, true)) +
          interpolate(gettext(": the graph shows at most %(max)s entities — refine the search."), { max: MAX_NODES }, true),
        "capped"
      );
    } else if (added.length || newEdges.length) {
      say(interpolate(ngettext("Added %(n)s neighbour of %(name)s (%(hops)s).", "Added %(n)s neighbours of %(name)s (%(hops)s).", added.length), { n: added.length, name: name, hops: hops }, true));
    } else {
      say(interpolate(gettext("%(name)s: every neighbour within %(hops)s is already drawn."), { name: name, hops: hops }, true));
    }
    if (added.length || newEdges.length) {
      runLayout(false);
    }
  }

  // --- the side panel ---------------------------------------------------------------------------------------------

  function showPanel(address) {
    if (window.htmx) {
      window.htmx.ajax("GET", address, { target: "#graph-panel", swap: "innerHTML" });
    } else {
      panel.textContent = gettext("The details need htmx, which did not load.");
    }
  }

  cy.on("tap", "node", (event) => {
    const node = event.target;
    cy.elements().unselect();
    node.select();
    showPanel(url(root.dataset.entityMemoriesUrl, node.id()));
    expand(node);
  });

  cy.on("tap", "edge", (event) => {
    cy.elements().unselect();
    event.target.select();
    showPanel(url(root.dataset.relationMemoriesUrl, event.target.id()));
  });

  // --- curation: the side panel's forms answer with a `graph-changed` event (HX-Trigger) -----------------------

  function removeById(id) {
    const element = cy.getElementById(id);
    if (!element.empty()) {
      element.remove(); // a node takes its edges with it
    }
  }

  document.body.addEventListener("graph-changed", (event) => {
    const change = event.detail || {};
    if (change.action === "update" && change.node) {
      const node = cy.getElementById(change.node.id);
      node.data({
        label: change.node.label,
        type: change.node.type,
        typeLabel: change.node.type_label,
        color: colours[change.node.type] || colours.OTHER || "#9ca3af",
      });
      node.toggleClass("type-hidden", hiddenTypes.has(change.node.type));
      say(interpolate(gettext("Saved %(name)s."), { name: change.node.label }, true));
    } else if (change.action === "merge" && change.node) {
      const gone = cy.getElementById(change.removed);
      const position = gone.empty() ? undefined : { ...gone.position() };
      removeById(change.removed);
      if (cy.getElementById(change.node.id).empty()) {
        cy.add(nodeElement(change.node, position));
      }
      const centre = cy.getElementById(change.node.id).position();
      const fresh = (change.nodes || []).filter((node) => cy.getElementById(node.id).empty());
      cy.add(fresh.slice(0, Math.max(0, MAX_NODES - cy.nodes().length)).map((node) => nodeElement(node, { ...centre })));
      cy.add(edgeElements(change.edges || []));
      cy.elements().unselect();
      cy.getElementById(change.node.id).select();
      say(interpolate(gettext("Merged into %(name)s."), { name: change.node.label }, true));
      runLayout(false);
    } else if (change.action === "delete") {
      removeById(change.removed);
      say(gettext("Entity deleted."));
    } else if (change.action === "update-edge" && change.edge) {
      cy.getElementById(change.edge.id).data({ type: change.edge.type, strength: change.edge.strength });
      say(interpolate(gettext("Saved the relation %(type)s."), { type: change.edge.type }, true));
    } else if (change.action === "delete-edge") {
      removeById(change.removed);
      say(gettext("Relation deleted."));
    }
  });

  // --- controls --------------------------------------------------------------------------------------------------

  function rememberFilters() {
    const query = new URLSearchParams();
    for (const name of ["q", "type", "depth"]) {
      if (formValue(name) && !(name === "depth" && formValue(name) === "1")) {
        query.set(name, formValue(name));
      }
    }
    const search = query.toString();
    window.history.replaceState(null, "", search ? `${window.location.pathname}?${search}` : window.location.pathname);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    rememberFilters();
    load();
  });
  form.elements.namedItem("type").addEventListener("change", () => {
    rememberFilters();
    load();
  });
  form.elements.namedItem("depth").addEventListener("change", rememberFilters);
  document.getElementById("graph-fit").addEventListener("click", () => {
    cy.maxZoom(COMFORTABLE_ZOOM);
    cy.fit(undefined, 30);
    cy.maxZoom(MAX_ZOOM);
  });

  for (const button of legendButtons) {
    button.addEventListener("click", () => {
      const type = button.dataset.type;
      const hide = !hiddenTypes.has(type);
      if (hide) {
        hiddenTypes.add(type);
      } else {
        hiddenTypes.delete(type);
      }
      button.setAttribute("aria-pressed", String(!hide));
      cy.nodes().filter((node) => node.data("type") === type).toggleClass("type-hidden", hide);
    });
  }

  load();
})();
