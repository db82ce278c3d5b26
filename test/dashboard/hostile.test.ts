/**
 * The dashboard against hostile data, in a real browser: markup and
 * `javascript:` URLs planted in every piece of server data a screen shows
 * (system names and descriptions, instance fields, key and session names,
 * permission names such as `constructor`, request-log paths, query strings
 * and user agents from hostile data requests, audit diffs, Explain messages,
 * connection-test details from a back end that redirects to `javascript:`,
 * catalog entity sets from a hostile `$metadata`, the page URL's own query
 * on Logs and Audit). Every screen is visited twice: once with the CSP
 * switched off by the browser (so that only the app's own rendering stands
 * between the data and a script: the canary `window.__pwned` must stay
 * empty) and once under the real CSP (no `securitypolicyviolation`). Each
 * time no element may carry the planted `data-pwned` attribute, an event
 * handler attribute or a `javascript:` URL, no alert or prompt may open,
 * and the planted text must be shown as text.
 *
 * Also: a new key's secret, once its dialog is closed, is nowhere the page
 * or the browser keeps state (DOM, form values, history, storage, cookies,
 * the page's resource URLs), not after Back from another page, and in no
 * log or audit answer.
 * Skipped with one line when no Chromium is installed (fails under CI).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Dialog, Page } from "playwright-core";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminCall, browserAvailable, launchBrowser } from "../../test-support/browser.js";
import { startErplink, type RunningErplink } from "../../test-support/e2e.js";
import { HOSTILE_SETS, JS_URL, XSS, startHostileODataBackend, type HostileODataBackend } from "../../test-support/hostile-odata-backend.js";

const test = suite("dashboard: hostile data");
const NAME = "dashboard hostile-data suite";

interface Ctx {
  erplink: RunningErplink;
  backend: HostileODataBackend;
  browser: Browser;
  /** The hostile data key's id and the hostile system's name. */
  keyId: string;
  systemName: string;
}
const ctx = {} as Ctx;

const admin = (method: string, path: string, body?: unknown) => adminCall(ctx.erplink, method, path, body);

/** Waits until the request log holds at least `n` entries matching the query (writes are batched about every second). */
async function logged(query: string, n = 1): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if ((await admin("GET", `/admin/logs?${query}`)).body.data.length >= n) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`fewer than ${n} log entries for ${query}`);
}

/** Plants hostile data through the admin API and the data path. */
async function seed(): Promise<void> {
  ctx.systemName = `S${XSS}`;
  const sys = await admin("POST", "/admin/systems", {
    name: ctx.systemName,
    description: `${XSS} ${JS_URL}`,
    labels: { owner: XSS, "a/b": JS_URL },
  });
  assert.is(sys.status, 201, JSON.stringify(sys.body));
  const ins = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
    name: "evil",
    environment: XSS,
    // Raw `"`, `<` and `>` are not URI characters (refused: 400); what a URL may carry is `'` and percent-encoded markup.
    base_url: `${ctx.backend.baseUrl}x'%22%3E%3Cb%20data-pwned%3E/`,
    services: { SVC: { path: "svc" }, REDIR: { path: "redirect" }, BROKEN: { path: "broken" }, constructor: { path: "svc'$(x)" } },
    auth: { type: "basic", username: XSS, password: "pw" },
  });
  assert.is(ins.status, 201, JSON.stringify(ins.body));
  const plain = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, { name: "evil2", base_url: ctx.backend.baseUrl, services: { SVC: { path: "svc" } } });
  assert.is(plain.status, 201, JSON.stringify(plain.body));
  const key = await admin("POST", "/admin/api-keys", {
    name: `K${XSS}`,
    permissions: { evil2: { SVC: { "*": ["list", "get"], constructor: ["get"], toString: ["list"] }, constructor: { hasOwnProperty: ["get"] } } },
  });
  assert.is(key.status, 201, JSON.stringify(key.body));
  ctx.keyId = key.body.data.id;
  // A change with hostile values before and after, for the audit diff.
  const patched = await admin("PATCH", `/admin/api-keys/${ctx.keyId}`, { name: `K2${XSS}` });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  // `__proto__` as a service or entity set name is reserved: refused over Connect too (the REST facade refuses such JSON keys).
  const connectCreate = (permissions: string) =>
    fetch(`${ctx.erplink.baseUrl}/erplink.admin.v1.ApiKeyService/CreateApiKey`, {
      method: "POST",
      headers: { authorization: ctx.erplink.authorization, "content-type": "application/json" },
      body: `{"apiKey": {"name": "proto", "permissions": ${permissions}}}`,
    });
  const reserved = await connectCreate('{"evil2": {"__proto__": {"__proto__": ["get"]}}}');
  assert.is(reserved.status, 400);
  assert.is(((await reserved.json()) as { code: string }).code, "invalid_argument");
  // Names of other inherited members are ordinary names.
  const proto = await connectCreate('{"evil2": {"constructor": {"toString": ["get"], "Orders": ["list"]}, "SVC": {"hasOwnProperty": ["list"]}}}');
  assert.is(proto.status, 200, await proto.text());
  const ses = await admin("POST", "/admin/sessions", { label: `L${XSS}` });
  assert.is(ses.status, 201, JSON.stringify(ses.body));
  // Hostile data requests: names, query strings, user agents and request ids in the request log and usage.
  const secret: string = key.body.data.key;
  const urls = [
    `/odata/evil2/SVC/${encodeURIComponent(HOSTILE_SETS[0])}`,
    `/odata/evil2/SVC/Orders?$filter=${encodeURIComponent(XSS)}&x=${encodeURIComponent(JS_URL)}`,
    `/odata/${encodeURIComponent(XSS)}/SVC/Orders`,
    "/odata/evil2/SVC/constructor",
    "/odata/evil2/SVC/toString",
    `/admin/${encodeURIComponent(XSS)}`,
  ];
  for (const url of urls) {
    const res = await fetch(`${ctx.erplink.baseUrl}${url}`, { headers: { authorization: `Bearer ${secret}`, "user-agent": `UA${XSS}`, "x-request-id": "req-evil:1.2_3" } });
    await res.arrayBuffer();
  }
  await logged("status=4xx", 5);
}

/** Dialogs the page opened: type and message. */
type Seen = { type: string; message: string }[];

/**
 * Fails when the page shows a sign of injected markup or script: an element
 * with the planted `data-pwned` attribute, any `on…` handler attribute, a
 * `javascript:` or `data:` URL in a link, source or form target, a frame,
 * object or image, an inline script, a pushed canary, or (under the CSP) a
 * policy violation.
 */
async function assertClean(page: Page, dialogs: Seen, where: string): Promise<void> {
  const found = (await page.evaluate(`(() => {
    const bad = [];
    for (const el of document.querySelectorAll("*")) {
      for (const a of el.attributes) {
        const v = a.value.trim().toLowerCase();
        if (a.name === "data-pwned" || a.name.startsWith("on")) bad.push(el.tagName + " " + a.name);
        if (["href", "src", "action", "formaction", "xlink:href", "srcdoc", "poster", "background"].includes(a.name) && (v.startsWith("javascript:") || v.startsWith("data:") || (v.includes("pwned") && !(v.startsWith("/") && !v.startsWith("//"))))) bad.push(el.tagName + " " + a.name + "=" + a.value);
        if (a.name === "style" && v.includes("pwned")) bad.push(el.tagName + " style");
      }
    }
    for (const el of document.querySelectorAll("iframe, frame, object, embed, img, image, svg, math, base, meta[http-equiv], form[action], link:not([rel=stylesheet])")) bad.push("element " + el.tagName);
    for (const s of document.scripts) if (!s.src) bad.push("inline script");
    return { bad, pwned: window.__pwned ?? [], violations: window.__violations ?? [] };
  })()`)) as { bad: string[]; pwned: unknown[]; violations: string[] };
  assert.equal(found.bad, [], `${where}: injected markup`);
  assert.equal(found.pwned, [], `${where}: a planted script ran`);
  assert.equal(found.violations, [], `${where}: CSP violations`);
  assert.equal(dialogs, [], `${where}: a native alert, confirm or prompt opened`);
}

/** Fails unless the page shows `text` as text (so the hostile data was rendered, not dropped). */
async function assertShown(page: Page, text: string, where: string): Promise<void> {
  const body = (await page.evaluate("document.body.textContent")) as string;
  assert.ok(body.includes(text), `${where}: ${JSON.stringify(text)} is not shown as text`);
}

/** A fresh signed-in page; `bypassCSP` makes the browser ignore the page's CSP. */
async function signedInPage(bypassCSP: boolean): Promise<{ context: BrowserContext; page: Page; dialogs: Seen }> {
  const context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP });
  await context.addInitScript(`
    window.__pwned = [];
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective + " " + e.blockedURI));
  `);
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  const dialogs: Seen = [];
  page.on("dialog", (d: Dialog) => {
    dialogs.push({ type: d.type(), message: d.message() });
    // None is expected (confirmations are the page's own dialogs): one seen is declined and fails the sweep.
    void d.dismiss();
  });
  await page.goto(`${ctx.erplink.baseUrl}/dashboard/`);
  await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return { context, page, dialogs };
}

/** Visits every screen and every hostile detail, checking each. */
async function sweep(page: Page, dialogs: Seen, mode: string): Promise<void> {
  const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true }).click();

  // Overview: recent refusals (paths, keys) and the top entity sets.
  await page.getByRole("table", { name: /Recent refused requests/ }).getByText("/odata/evil2/SVC/Orders", { exact: false }).first().waitFor();
  await page.getByRole("table", { name: "Top entity sets" }).getByText("constructor").waitFor();
  await assertClean(page, dialogs, `${mode} overview`);

  // Systems and the hostile system's instances.
  await nav("Systems");
  await page.getByRole("button", { name: `Instances of ${ctx.systemName}` }).click();
  await page.getByRole("button", { name: "Edit instance evil", exact: true }).waitFor();
  await assertShown(page, ctx.systemName, `${mode} systems`);
  await assertShown(page, `${XSS} ${JS_URL}`, `${mode} systems`);
  await assertShown(page, XSS, `${mode} instances`);
  await assertClean(page, dialogs, `${mode} systems`);
  await page.getByRole("button", { name: "Edit instance evil", exact: true }).click();
  await page.getByRole("button", { name: "Save instance" }).waitFor();
  await assertClean(page, dialogs, `${mode} instance form`);
  await page.getByRole("button", { name: "Cancel" }).click();
  // A connection test against a back end that redirects to javascript: with markup, then one that fails with markup.
  await page.getByRole("button", { name: "Test connection of evil", exact: true }).click();
  for (const [service, path] of [["REDIR", "redirect"], ["BROKEN", "broken"]] as const) {
    await page.getByLabel("Service to test (optional)").fill(service);
    await page.getByRole("button", { name: "Run test" }).click();
    await page.getByText(new RegExp(`^Connection failed: http: .*/${path}/\\$metadata`)).waitFor();
    await assertClean(page, dialogs, `${mode} connection test ${service}`);
    if (service === "REDIR") await assertShown(page, `__pwned.push(2)//${XSS} (erplink does not follow redirects)`, `${mode} connection test`);
  }
  // Deleting the system (it has instances) is refused with its name, before asking: text only.
  await page.getByRole("button", { name: `Delete system ${ctx.systemName}` }).click();
  await page.getByRole("alert").filter({ hasText: "then the system." }).waitFor();
  await assertShown(page, `${ctx.systemName} has`, `${mode} delete refusal`);
  await assertClean(page, dialogs, `${mode} delete refusal`);

  // API keys: the list, the hostile key's editor (catalog of hostile entity sets, JSON view) and Explain.
  await nav("API keys");
  const keyName = `K2${XSS}`;
  await page.getByRole("button", { name: `Edit key ${keyName}` }).click();
  await page.getByText(`${HOSTILE_SETS.length + 1} entity sets in $metadata`).first().waitFor();
  const offered = await page.locator("datalist[id^='edit-perm-sets'] option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
  assert.ok(offered.includes("Orders"), JSON.stringify(offered));
  await page.getByRole("group", { name: "Entity set constructor in SVC of evil2" }).waitFor();
  await page.getByRole("group", { name: "Entity set hasOwnProperty in constructor of evil2" }).waitFor();
  await assertShown(page, keyName, `${mode} key editor`);
  await assertClean(page, dialogs, `${mode} key editor`);
  await page.getByLabel("OData URL").fill(`/odata/evil2/SVC/${encodeURIComponent(HOSTILE_SETS[0])}?$filter=${encodeURIComponent(XSS)}`);
  await page.locator(".explain-result, .explain .error").first().waitFor();
  await assertClean(page, dialogs, `${mode} explain`);
  await page.getByLabel("OData URL").fill(`/odata/${encodeURIComponent(XSS)}/SVC/Orders`);
  await page.getByText(/API key has no access to instance/).first().waitFor();
  await assertShown(page, `instance '${XSS}'`, `${mode} explain`);
  await assertClean(page, dialogs, `${mode} explain`);
  await page.getByRole("button", { name: "Close editor" }).click();
  // Names such as constructor are shown as the keys they are, not lost or merged into a prototype.
  await page.getByRole("button", { name: "Edit key proto" }).click();
  await page.getByRole("group", { name: "Entity set toString in constructor of evil2" }).waitFor();
  await page.getByRole("group", { name: "Entity set Orders in constructor of evil2" }).waitFor();
  await page.getByRole("group", { name: "Entity set hasOwnProperty in SVC of evil2" }).waitFor();
  // Compared as text: uvu's deep equality reads `constructor` and `hasOwnProperty` of the objects it compares.
  assert.is(JSON.stringify(JSON.parse(await page.getByLabel("Permissions as JSON").inputValue())), '{"evil2":{"constructor":{"toString":["get"],"Orders":["list"]},"SVC":{"hasOwnProperty":["list"]}}}');
  await assertClean(page, dialogs, `${mode} inherited-name key editor`);
  await page.getByRole("button", { name: "Close editor" }).click();

  // Logs: the list, then the details of each hostile entry.
  await nav("Logs");
  await page.getByRole("table").waitFor();
  await assertClean(page, dialogs, `${mode} logs`);
  // The hostile key's data requests (later admin calls push them off the first page).
  await page.getByLabel("API key", { exact: true }).selectOption(ctx.keyId);
  // The filtered page's call must be answered before the rows are counted:
  // the unfiltered list stays on screen until the view's effect clears it,
  // and a count taken then is 0. (waitForLoadState("networkidle") does not
  // wait for it: the URL changes by pushState, and the page's load state was
  // reached long before.)
  const filteredPage = page.waitForResponse(
    (r) => new URL(r.url()).pathname === "/admin/logs" && new URL(r.url()).searchParams.get("api_key_id") === ctx.keyId,
  );
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL(/api_key_id=/);
  await filteredPage;
  const details = page.getByRole("button", { name: /^Details of GET \/odata\// });
  await details.first().waitFor();
  const n = await details.count();
  assert.ok(n >= 5, `${mode}: ${n} data requests listed`);
  for (let i = 0; i < n; i++) {
    await details.nth(i).click();
    await page.getByRole("heading", { name: /^Entry log_/ }).waitFor();
    await assertClean(page, dialogs, `${mode} log entry ${i}`);
  }
  await assertShown(page, `UA${XSS}`, `${mode} log entry`);

  // Audit: diffs of hostile names.
  await nav("Audit");
  await page.getByRole("list", { name: /changes, newest first$/ }).waitFor();
  await assertShown(page, `name: K${XSS} → K2${XSS}`, `${mode} audit`);
  await assertClean(page, dialogs, `${mode} audit`);

  // Sessions: the hostile label, and its revoke confirmation (declined).
  await nav("Sessions");
  const revoke = page.getByRole("button", { name: new RegExp(`^Revoke session L`) });
  await revoke.waitFor();
  await assertShown(page, `L${XSS}`, `${mode} sessions`);
  await revoke.click();
  // The page's own confirmation shows the hostile label as text; declined.
  const ask = page.getByRole("dialog", { name: /^Revoke session L/ });
  await ask.waitFor();
  await assertClean(page, dialogs, `${mode} sessions`);
  await ask.getByRole("button", { name: "Cancel" }).click();
  await ask.waitFor({ state: "detached" });

  // Views taken from a crafted page URL: rendered as filters and the server's refusals, as text.
  for (const url of [
    `/dashboard/logs?instance=${encodeURIComponent(XSS)}&id=${encodeURIComponent(XSS)}&status=${encodeURIComponent(JS_URL)}&page_token=${encodeURIComponent(XSS)}`,
    `/dashboard/audit?actor=${encodeURIComponent(XSS)}&from=${encodeURIComponent(JS_URL)}&__proto__=x&constructor=y`,
    `/dashboard/api-keys/${encodeURIComponent(XSS)}`,
    "/dashboard/api-keys/..%2F..%2Fsessions%2Fcurrent",
    `/dashboard/logs?id=../../sessions/current&api_key_id=${encodeURIComponent("x&status=200")}`,
  ]) {
    await page.goto(`${ctx.erplink.baseUrl}${url}`);
    await page.getByRole("heading", { level: 1 }).waitFor();
    await page.getByRole("alert").first().waitFor();
    await assertClean(page, dialogs, `${mode} ${url}`);
  }
  // The crafted filter value is a value, not extra filters.
  assert.is(await page.getByLabel("API key", { exact: true }).inputValue(), "x&status=200");
  assert.is(await page.getByLabel("Status").inputValue(), "");
  // Confirmations are the page's own dialogs: the browser's never opened.
  assert.equal(dialogs, [], "no native dialog opened");
}

if (browserAvailable(NAME)) {
  test.before(async () => {
    // Every screen twice makes more admin calls than the default budget of 100 a minute.
    ctx.erplink = await startErplink({ ERPLINK_ADMIN_RATE_PER_MINUTE: "100000" });
    ctx.backend = await startHostileODataBackend();
    await seed();
    ctx.browser = await launchBrowser();
  });
  test.after(async () => {
    await ctx.browser?.close();
    await ctx.erplink?.close();
    await ctx.backend?.close();
  });

  test("with the CSP switched off, no hostile text becomes markup or script on any screen (the app's rendering alone)", async () => {
    const { context, page, dialogs } = await signedInPage(true);
    try {
      // The canary works: with the CSP off, an injected handler does run.
      await page.evaluate(`document.body.insertAdjacentHTML("beforeend", ${JSON.stringify(XSS)})`);
      await page.waitForFunction("window.__pwned.length === 1");
      await page.evaluate("document.querySelector('[data-pwned]').remove(); window.__pwned.length = 0");
      await sweep(page, dialogs, "CSP off");
    } finally {
      await context.close();
    }
  });

  test("under the real CSP every screen renders the hostile data without a policy violation", async () => {
    const { context, page, dialogs } = await signedInPage(false);
    try {
      await sweep(page, dialogs, "CSP on");
    } finally {
      await context.close();
    }
  });

  test("a new key's secret, once its dialog is closed, is in no page state, not after Back, and in no log or audit answer", async () => {
    const { context, page } = await signedInPage(false);
    const requested: string[] = [];
    page.on("request", (r) => requested.push(`${r.url()} ${r.headers().referer ?? ""}`));
    try {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
      await page.getByRole("button", { name: "New API key" }).click();
      const form = page.getByRole("form", { name: "New API key" });
      await form.getByLabel("Name").fill("once");
      await form.getByLabel("Type").selectOption("admin");
      await form.getByRole("button", { name: "Create key" }).click();
      const dialog = page.getByRole("dialog", { name: "Key once created" });
      await dialog.waitFor();
      const secret = await dialog.getByLabel("Secret").inputValue();
      assert.match(secret, /^erpl_[A-Za-z0-9]{49}$/);
      await dialog.getByRole("button", { name: "Close" }).click();
      await page.getByRole("dialog", { name: "Close without the secret?" }).getByRole("button", { name: "Close, I stored it" }).click();
      await dialog.waitFor({ state: "detached" });

      const traces = async (where: string) => {
        const state = (await page.evaluate(`(() => {
          const values = [...document.querySelectorAll("input, textarea, select")].map((e) => e.value);
          return {
            html: document.documentElement.outerHTML,
            values,
            history: JSON.stringify(history.state),
            url: location.href,
            cookie: document.cookie,
            local: JSON.stringify({ ...localStorage }),
            session: JSON.stringify({ ...sessionStorage }),
            resources: performance.getEntries().map((e) => e.name).join(" "),
            title: document.title,
          };
        })()`)) as Record<string, unknown>;
        for (const [name, value] of Object.entries(state)) {
          assert.not.ok(JSON.stringify(value).includes(secret), `${where}: the secret is in ${name}`);
        }
      };
      await traces("after closing");
      // Another page and Back (whether or not the browser restores the page from its back/forward cache).
      await page.goto(`${ctx.erplink.baseUrl}/api-reference/`);
      await page.goBack();
      await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
      await traces("after Back");
      await page.reload();
      await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
      await traces("after a reload");
      assert.ok(requested.length > 0);
      assert.equal(requested.filter((r) => r.includes(secret)), [], "no request URL or Referer holds the secret");
      await logged("method=POST&status=201");
      for (const path of ["/admin/logs?page_size=500", "/admin/audit?page_size=500", "/admin/api-keys?page_size=500", "/admin/sessions?page_size=500"]) {
        const res = await admin("GET", path);
        assert.is(res.status, 200, path);
        assert.not.ok(JSON.stringify(res.body).includes(secret), `${path} holds the secret`);
      }
    } finally {
      await context.close();
    }
  });

  test("the API reference renders under its CSP without a violation, and its Try it out does not ride the dashboard's session (no CSRF token: 403)", async () => {
    const { context, page } = await signedInPage(false);
    try {
      await page.goto(`${ctx.erplink.baseUrl}/api-reference/`);
      const op = page.locator(".opblock-get").filter({ hasText: "/admin/systems" }).first();
      // Swagger UI renders the whole document (about 300 KB) first: slow on a loaded machine.
      await op.waitFor({ timeout: 30_000 });
      await op.locator(".opblock-summary-control").click();
      await op.getByRole("button", { name: "Try it out" }).click();
      const answer = page.waitForResponse((r) => new URL(r.url()).pathname === "/admin/systems");
      await op.getByRole("button", { name: "Execute" }).click();
      const res = await answer;
      // The browser sent the session cookie; without the dashboard's X-CSRF-Token it is no credential.
      assert.ok((await res.request().allHeaders()).cookie?.includes("__Host-erplink_session="), "the cookie went along");
      assert.is(res.status(), 403);
      assert.is(((await res.json()) as { error: { message: string } }).error.message, "missing X-CSRF-Token header: a request authenticated by the session cookie must echo the session's CSRF token");
      assert.equal(await page.evaluate("window.__violations"), []);
    } finally {
      await context.close();
    }
  });

  test("a CSRF cookie overwritten by another page of the host (cookies ignore ports) returns the dashboard to sign-in instead of failing every call; signing in again works", async () => {
    const { context, page } = await signedInPage(false);
    // A page on another port of the same host: same site, another origin, and the same cookie jar.
    const other = http.createServer((req, res) => {
      if (req.url === "/toss.js") {
        res.writeHead(200, { "content-type": "text/javascript" });
        res.end('document.cookie = "__Host-erplink_csrf=tossed; Path=/; Secure; SameSite=Strict"; document.title = "tossed";');
        return;
      }
      res.writeHead(200, { "content-type": "text/html" });
      res.end('<!doctype html><title>other</title><script src="/toss.js"></script>');
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const attacker = await context.newPage();
      await attacker.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      await attacker.waitForFunction("document.title === 'tossed'");
      await attacker.close();
      assert.ok((await context.cookies(ctx.erplink.baseUrl)).some((c) => c.name === "__Host-erplink_csrf" && c.value === "tossed"), "the cookie was overwritten");
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Systems" }).click();
      // Back to sign-in with the server's reason, not stuck on a screen whose every call (sign-out included) fails.
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      await page.getByRole("status").getByText("the X-CSRF-Token header does not match the session").waitFor();
      await page.getByLabel("Admin key").fill(ctx.erplink.masterKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Systems", level: 1 }).waitFor();
      await page.getByRole("button", { name: `Instances of ${ctx.systemName}` }).waitFor();
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
      await context.close();
    }
  });
}

test.run();
