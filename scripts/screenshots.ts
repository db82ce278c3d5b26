/**
 * The dashboard's screenshots in docs/screenshots/: every screen at 1280 and
 * 1920 px wide, in the light and the dark colour scheme, against SAP CAP
 * (the tests' OData back end, V4 and V2) with a system, two instances, keys
 * and some traffic, allowed and refused.
 *
 * Usage: npm run screenshots   (needs Chromium: scripts/chromium.sh; ERPLINK_CHROMIUM overrides its path)
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { adminCall, launchBrowser } from "../test-support/browser.js";
import { startCapBackend } from "../test-support/cap/index.js";
import { REPO_ROOT, startErplink } from "../test-support/e2e.js";

const OUT = path.join(REPO_ROOT, "docs", "screenshots");
const WIDTHS = [1280, 1920] as const;
const SCHEMES = ["light", "dark"] as const;

const cap = await startCapBackend();
const erplink = await startErplink();
const admin = async (method: string, p: string, body?: unknown) => {
  const res = await adminCall(erplink, method, p, body);
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
};

try {
  // The world an SAP admin would have on a first day.
  const system = await admin("POST", "/admin/systems", { name: "S4HANA", description: "S/4HANA Cloud, sales and partners", labels: { team: "sales", region: "eu" } });
  await admin("POST", `/admin/systems/${system.id}/instances`, {
    name: "s4-prod",
    environment: "production",
    base_url: `${cap.baseUrl}/odata/v4/`,
    services: { API_BUSINESS_PARTNER: { path: "api-business-partner" }, API_SALES_ORDER: { path: "api-sales-order" } },
    auth: { type: "basic", username: cap.credentials.username, password: cap.credentials.password },
  });
  await admin("POST", `/admin/systems/${system.id}/instances`, {
    name: "s4-dev",
    environment: "development",
    base_url: `${cap.baseUrl}/odata/v2/`,
    services: { API_BUSINESS_PARTNER: { path: "api-business-partner" } },
    auth: { type: "basic", username: cap.credentials.username, password: cap.credentials.password },
  });
  await admin("POST", "/admin/systems", { name: "ECC", description: "SAP ECC 6.0 (retiring)", labels: { team: "finance" } });
  const reader = await admin("POST", "/admin/api-keys", {
    name: "partner-portal",
    type: "data",
    rate_limits: { per_minute: 600, per_day: 100000 },
    permissions: { "s4-prod": { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"], A_BusinessPartnerAddress: ["list"] } } },
  });
  const orders = await admin("POST", "/admin/api-keys", {
    name: "order-sync",
    type: "data",
    permissions: { "s4-prod": { API_SALES_ORDER: { "*": ["list", "get", "create", "update"] } } },
  });
  await admin("POST", "/admin/api-keys", { name: "ci-deploy", type: "admin" });
  // Traffic: allowed and refused, so that the overview, logs and audit have something to show.
  for (const [key, p] of [
    [reader.key, "/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartner?$top=5"],
    [reader.key, "/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartner?$top=2&$select=BusinessPartner"],
    [reader.key, "/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartnerAddress"],
    [reader.key, "/odata/s4-prod/API_SALES_ORDER/A_SalesOrder"],
    [orders.key, "/odata/s4-prod/API_SALES_ORDER/A_SalesOrder?$top=3"],
    [orders.key, "/odata/s4-prod/API_BUSINESS_PARTNER/A_BusinessPartner"],
  ] as const) {
    for (let i = 0; i < 3; i++) await fetch(`${erplink.baseUrl}${p}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.arrayBuffer());
  }

  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const browser = await launchBrowser();
  try {
    for (const scheme of SCHEMES) {
      for (const width of WIDTHS) {
        const context = await browser.newContext({ viewport: { width, height: width === 1920 ? 1080 : 800 }, colorScheme: scheme });
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        const shot = async (name: string) => {
          await page.evaluate("window.scrollTo(0, 0)");
          await page.waitForTimeout(300);
          // The whole page, down to 1,600 px: long lists (logs, audit) are shown by their first screens.
          const height = Math.min((await page.evaluate("document.documentElement.scrollHeight")) as number, 1600);
          await page.screenshot({ path: path.join(OUT, `${name}-${width}-${scheme}.jpg`), fullPage: true, clip: { x: 0, y: 0, width, height }, type: "jpeg", quality: 75 });
        };
        await page.goto(`${erplink.baseUrl}/dashboard/`);
        await page.getByRole("heading", { name: "Sign in" }).waitFor();
        await shot("sign-in");
        await page.getByLabel("Admin key").fill(erplink.masterKey);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
        await page.waitForLoadState("networkidle");
        await shot("overview");
        await visit(page, "systems", "Systems");
        await page.getByRole("button", { name: "Instances of S4HANA" }).click();
        await page.getByRole("heading", { name: "Instances of S4HANA" }).waitFor();
        await page.getByRole("button", { name: "Test connection of s4-prod" }).click();
        await page.getByRole("button", { name: /^Run( the)? test/ }).click().catch(() => {});
        await page.waitForLoadState("networkidle");
        await shot("systems");
        await visit(page, "api-keys", "API keys");
        await shot("api-keys");
        await page.goto(`${erplink.baseUrl}/dashboard/api-keys/${reader.id}`);
        await page.getByRole("heading", { name: "Edit key partner-portal" }).waitFor();
        await page.waitForLoadState("networkidle");
        await shot("api-key-editor");
        await visit(page, "logs", "Logs");
        await shot("logs");
        await visit(page, "audit", "Audit");
        await shot("audit");
        await visit(page, "sessions", "Sessions");
        await shot("sessions");
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  console.log(`screenshots written to ${path.relative(REPO_ROOT, OUT)}/`);
} finally {
  await erplink.close();
  await cap.stop();
}

async function visit(page: Page, route: string, title: string): Promise<void> {
  await page.goto(`${erplink.baseUrl}/dashboard/${route}`);
  await page.getByRole("heading", { name: title, level: 1 }).waitFor();
  await page.waitForLoadState("networkidle");
}
