// The effect oracle of the CAP test back end: what the database really did
// for a request, as operations on tables (and so on entity sets), for tests
// that check every effect is covered by an access erplink authorized. Used by
// ./server.mjs; see README.md ("The effect oracle") for the contract.
//
// Two sources, both SQLite itself rather than the SQL text:
// - writes, row by row, from sql.js's update hook (insert/update/delete);
// - reads, from the query planner: `EXPLAIN QUERY PLAN` of every statement
//   run, on the same connection, each table access classified as `get`
//   (a SEARCH with equality on every primary-key column) or `list`
//   (anything else), plus a look at the bytecode (`EXPLAIN`) for the one
//   multi-row access the plan shows like a key lookup: an IN list or an OR of
//   keys that drives the search (`k IN (?,?)` plans as `SEARCH t (k=?)`).
//   The bytecode's cursors also say which tables a statement really opens:
//   each is classified, as a `list` if no plan line accounts for it.
//
// Not seen (CAP does not write so): rows an INSERT OR REPLACE deletes (no
// hook, not in the change count), and writes behind a leading WITH (their
// own table's accesses would count as reads).
//
// Works with @cap-js/sqlite's sql.js driver (lib/sql.js.js), whose connection
// object (`dbc`) holds the sql.js Database as `dbc.db` and whose prepared
// statements run synchronously.

/** Update-hook operations and write statements -> effects. */
const WRITE_OPERATIONS = { insert: "create", update: "update", delete: "delete" };
const WRITE_STATEMENTS = { INSERT: "create", REPLACE: "create", UPSERT: "create", UPDATE: "update", DELETE: "delete" };
/** Statements with no table access worth explaining. */
const NOT_EXPLAINED = /^\s*(?:BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA|CREATE|DROP|ALTER|ANALYZE|VACUUM|ATTACH|DETACH)\b/i;
/** A write statement and the table it writes (CAP's writes start so; a leading WITH is not recognised). */
const WRITE_TARGET = /^\s*(INSERT|REPLACE|UPSERT|UPDATE|DELETE)(?:\s+OR\s+\w+)?(?:\s+(?:INTO|FROM))?\s+("(?:[^"]|"")+"|`[^`]+`|\[[^\]]+\]|[^\s(]+)/i;
/** Bytecode that positions a cursor on a key (the search an IN loop drives). */
const SEEKS = new Set(["SeekGE", "SeekGT", "SeekLE", "SeekLT", "SeekRowid", "NotExists", "Found", "NotFound", "NoConflict"]);
/** Explained statements kept (the plan depends on the SQL and the schema only). */
const ANALYSIS_CACHE_MAX = 2000;

const unquote = (name) => (/^["`[]/.test(name) ? name.slice(1, -1).replace(/""/g, '"') : name);

/**
 * @param {object} options
 * @param {number} options.max  request ids kept (oldest dropped first)
 * @param {() => string | undefined} options.requestId  the current request's id (CAP's correlation id)
 * @param {(sqlName: string) => {service: string, entity: string}[]} options.touchesOf  the service entities a table stands for
 */
export function createEffectOracle({ max, requestId, touchesOf }) {
  /** request id -> Map("operation table" -> effect), in the order first seen. */
  const byRequest = new Map();
  /** SQL -> its analysis (reads), shared by connections: same schema. */
  const analyses = new Map();
  const instrumented = new WeakSet();
  /** Why effects cannot be recorded (a driver other than sql.js), if so. */
  let unavailable;

  function add(id, effect) {
    let effects = byRequest.get(id);
    if (effects === undefined) {
      if (byRequest.size >= max) byRequest.delete(byRequest.keys().next().value);
      effects = new Map();
      byRequest.set(id, effects);
    }
    const key = `${effect.operation} ${effect.table}${effect.locates ? " locates" : ""}`;
    if (!effects.has(key)) effects.set(key, { ...effect, touches: touchesOf(effect.table) });
  }

  /**
   * Hooks one connection (idempotent): its update hook for writes, its
   * prepared statements for reads.
   */
  function instrument(dbc) {
    if (instrumented.has(dbc)) return;
    instrumented.add(dbc);
    const db = dbc.db;
    if (typeof db?.updateHook !== "function") {
      unavailable = "the database driver is not sql.js (no updateHook): effects are not recorded";
      process.stderr.write(`effect oracle: ${unavailable}\n`);
      return;
    }
    const schema = schemaOf(db);
    /** The statement being stepped now, for the update hook (statements run synchronously). */
    let running;
    db.updateHook((operation, _database, table) => {
      // The hook runs inside sqlite3_step, synchronously within the wrapped
      // run() below: `running` is that statement (and its id is the async
      // context's, checked). Writes outside a wrapped statement (none seen:
      // CAP's exec() is only BEGIN/COMMIT/ROLLBACK) fall back to the context.
      if (running) running.hooked++;
      const id = running ? running.id : requestId();
      if (id === undefined) return;
      add(id, { operation: WRITE_OPERATIONS[operation] ?? operation, table, sql: (running?.sql ?? "").slice(0, 300) });
    });
    const prepare = dbc.prepare;
    dbc.prepare = function (sql) {
      const stmt = prepare.call(this, sql);
      // Wrap in place: the driver frees the sql.js statement when this very
      // object is garbage-collected (a FinalizationRegistry on it).
      for (const method of ["run", "get", "all", "iterate"]) {
        const original = stmt[method];
        if (typeof original !== "function") continue;
        stmt[method] = function (...args) {
          const id = requestId();
          if (id !== undefined && !NOT_EXPLAINED.test(sql)) {
            const { reads, plan } = analyse(db, schema, sql);
            for (const read of reads) add(id, { operation: read.operation, table: read.table, ...(read.locates ? { locates: true } : {}), sql: sql.slice(0, 300), plan });
          }
          // iterate() returns a generator that steps later, but a read fires
          // no update hook, so only run/get/all need `running` around them.
          const outer = running;
          const current = (running = { id, sql, hooked: 0 });
          try {
            const result = original.apply(this, args);
            // SQLite changes some rows without calling the update hook: a
            // DELETE without WHERE (the truncate optimization), WITHOUT ROWID
            // tables. The driver's run() answers the change count: rows beyond
            // those hooked are the statement's own table's.
            if (method === "run" && id !== undefined && result?.changes > current.hooked) {
              const write = WRITE_TARGET.exec(sql);
              if (write) add(id, { operation: WRITE_STATEMENTS[write[1].toUpperCase()], table: unquote(write[2]), sql: sql.slice(0, 300) });
            }
            return result;
          } finally {
            running = outer;
          }
        };
      }
      return stmt;
    };
  }

  function analyse(db, schema, sql) {
    let analysis = analyses.get(sql);
    if (analysis === undefined) {
      analysis = explain(db, schema, sql);
      if (analyses.size >= ANALYSIS_CACHE_MAX) analyses.delete(analyses.keys().next().value);
      analyses.set(sql, analysis);
    }
    return analysis;
  }

  return {
    instrument,
    /** The effects recorded for a request id, in the order first seen. */
    effects: (id) => [...(byRequest.get(id)?.values() ?? [])],
    get unavailable() {
      return unavailable;
    },
  };
}

/**
 * What the plans and the bytecode need of the schema: tables and their
 * primary keys, views, root pages (the bytecode's cursors name those), and
 * the aliases the views give their tables (plan lines name a table by its
 * alias, and a flattened view keeps its own: `SCAN BusinessPartner_0`).
 * Re-read when the schema changes.
 */
function schemaOf(db) {
  let version;
  let tables; // name -> primary-key columns (read lazily)
  let views; // name -> its SQL
  let rootPages; // root page -> table (of a table or of an index)
  let indexes; // index name -> table
  const refresh = () => {
    const current = rows(db, "PRAGMA schema_version")[0][0];
    if (current === version) return;
    version = current;
    tables = new Map();
    views = new Map();
    rootPages = new Map();
    indexes = new Map();
    for (const [type, name, table, rootPage, sql] of rows(db, "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema")) {
      if (type === "table") tables.set(name, undefined);
      if (type === "view") views.set(name, sql ?? "");
      if (type === "index") indexes.set(name, table);
      if ((type === "table" || type === "index") && rootPage) rootPages.set(rootPage, table);
    }
  };
  return {
    refresh,
    isTable: (name) => tables.has(name),
    viewSql: () => [...views.values()],
    tableOfIndex: (name) => indexes.get(name),
    tableOfRootPage: (page) => rootPages.get(page),
    tableNames: () => [...tables.keys()],
    /** The primary-key columns of a table ([] if it has none but its rowid). */
    primaryKey(name) {
      let pk = tables.get(name);
      if (pk === undefined) {
        pk = rows(db, `SELECT name FROM pragma_table_info(${quoteLiteral(name)}) WHERE pk > 0 ORDER BY pk`).map(([column]) => column);
        tables.set(name, pk);
      }
      return pk;
    },
  };
}

const NAME = String.raw`"(?:[^"]|"")+"|\x60[^\x60]+\x60|\[[^\]]+\]|[A-Za-z_][\w$]*`;
/** A FROM item (or a write's table) with its alias: `FROM t AS a`, `JOIN t a`, `UPDATE t AS a`. */
const SOURCE = new RegExp(String.raw`\b(?:FROM|JOIN|UPDATE(?:\s+OR\s+\w+)?|INTO)\s+(${NAME})(?:\s+(AS\s+)?(${NAME}))?`, "gi");
/** Keywords that may follow a table without an alias. */
const NOT_ALIAS =
  /^(?:WHERE|ON|USING|LEFT|RIGHT|FULL|INNER|OUTER|CROSS|NATURAL|JOIN|GROUP|ORDER|LIMIT|UNION|EXCEPT|INTERSECT|WINDOW|HAVING|INDEXED|NOT|SET|VALUES|SELECT|DEFAULT|RETURNING)$/i;

/** alias -> the names (tables or views) it stands for, in the statement and in every view. */
function aliasesOf(texts) {
  const aliases = new Map();
  for (const text of texts) {
    for (const m of text.matchAll(SOURCE)) {
      if (m[3] === undefined || (!m[2] && NOT_ALIAS.test(m[3]))) continue;
      const alias = unquote(m[3]);
      if (!aliases.has(alias)) aliases.set(alias, new Set());
      aliases.get(alias).add(unquote(m[1]));
    }
  }
  return aliases;
}

/**
 * The reads of one statement: per table access in its query plan, `get` or
 * `list`; the table a write statement writes is left out (its addressing;
 * the write itself comes from the update hook). Every table the bytecode
 * opens must be classified: one no plan line accounts for is listed.
 */
function explain(db, schema, sql) {
  schema.refresh();
  const target = WRITE_TARGET.exec(sql);
  const written = target ? unquote(target[2]) : undefined;
  let planRows;
  let opened;
  try {
    planRows = rows(db, `EXPLAIN QUERY PLAN ${sql}`);
    opened = bytecodeOf(db, schema, sql);
  } catch (err) {
    // Not expected (the statement itself prepared): be conservative, every
    // table the SQL names is listed.
    const words = new Set(sql.match(/[A-Za-z_][\w$]*/g) ?? []);
    const reads = schema
      .tableNames()
      .filter((t) => words.has(t) && t !== written)
      .map((table) => ({ operation: "list", table }));
    return { reads, plan: [`EXPLAIN failed: ${err.message}`] };
  }
  const byId = new Map(planRows.map(([id, parent, , detail]) => [id, { parent, detail: String(detail) }]));
  const ancestors = (id) => {
    const out = [];
    for (let node = byId.get(byId.get(id)?.parent); node; node = byId.get(node.parent)) out.push(node.detail);
    return out;
  };
  const plan = planRows.map(([id, , , detail]) => `${"  ".repeat(ancestors(id).length)}${detail}`);
  let aliases;
  /** The tables a plan line's name may be (a table, or an alias of one); [] for views, subqueries, CTEs, json_each. */
  const tablesNamed = (name) => {
    if (schema.isTable(name)) return [name];
    aliases ??= aliasesOf([sql, ...schema.viewSql()]);
    const candidates = [...(aliases.get(name) ?? [])].filter((t) => schema.isTable(t));
    const touched = candidates.filter((t) => opened.tables.has(t));
    return touched.length > 0 ? touched : candidates;
  };

  const reads = new Map(); // "operation table" -> read
  const accounted = new Set();
  // A write statement's reads of other tables locate the rows it writes (a
  // cascade finds a parent's children through the parent): they return
  // nothing to the client, and are marked so.
  const locates = written !== undefined;
  const read = (table, operation) => {
    accounted.add(table);
    if (table !== written) reads.set(`${operation} ${table}`, { operation, table, ...(locates ? { locates: true } : {}) });
  };
  for (const [id, , , rawDetail] of planRows) {
    const detail = String(rawDetail);
    const access = /^(SCAN|SEARCH) (\S+)(.*)$/.exec(detail);
    if (access) {
      const using = /\bUSING (INTEGER PRIMARY KEY|PRIMARY KEY|COVERING INDEX (\S+)|INDEX (\S+)|AUTOMATIC [A-Z ]*INDEX) \(([^)]*)\)/.exec(access[3]);
      // The index a line names identifies its table exactly; else its name (often an alias).
      const index = using?.[2] ?? using?.[3] ?? /\bUSING (?:COVERING )?INDEX (\S+)/.exec(access[3])?.[1];
      const table = index !== undefined ? schema.tableOfIndex(index) : undefined;
      for (const t of table !== undefined ? [table] : tablesNamed(access[2])) {
        const get = access[1] === "SEARCH" && using !== null && isKeyLookup(schema, t, using, ancestors(id), opened.inDriven);
        read(t, get ? "get" : "list");
      }
      continue;
    }
    // A Bloom filter is built by reading the whole table.
    const bloom = /^BLOOM FILTER ON (\S+)/.exec(detail);
    if (bloom) {
      for (const t of tablesNamed(bloom[1])) read(t, "list");
      continue;
    }
    // Other lines structure the plan (subqueries, temp b-trees, OR); any
    // other line is covered by the check below.
  }
  // Tables the bytecode opens that no line accounted for (a plan line not
  // understood, an alias not resolved): listed.
  for (const table of opened.tables) if (!accounted.has(table)) read(table, "list");
  return { reads: [...reads.values()], plan };
}

/**
 * Whether a SEARCH reads one row: equality on every primary-key column (or
 * the rowid), by a real index (an automatic one is built by reading the whole
 * table), not one of several searches of a MULTI-INDEX OR, and not driven by
 * an IN list.
 */
function isKeyLookup(schema, table, using, ancestors, inDriven) {
  if (using[1].startsWith("AUTOMATIC")) return false;
  if (ancestors.some((line) => line.startsWith("MULTI-INDEX OR"))) return false;
  if (inDriven.has(table)) return false;
  const equal = new Set(
    using[4]
      .split(" AND ")
      .map((term) => /^(\S+)=\?$/.exec(term.trim())?.[1])
      .filter(Boolean),
  );
  if (equal.has("rowid")) return true;
  const pk = schema.primaryKey(table);
  return pk.length > 0 && pk.every((column) => equal.has(column));
}

/**
 * From the bytecode (`EXPLAIN`): the tables the statement opens (the truth
 * of what it touches), and the tables searched inside an IN loop — a loop
 * (Rewind…Next) over an ephemeral index, how SQLite holds an IN list or an
 * OR of values of one column, whose first seek is on a cursor of the table.
 * The query plan shows such a search as `(k=?)`, like a single key.
 */
function bytecodeOf(db, schema, sql) {
  const ops = rows(db, `EXPLAIN ${sql}`).map(([addr, opcode, p1, p2, p3, p4]) => ({ addr, opcode, p1, p2, p3, p4 }));
  const cursorTable = new Map();
  const lists = new Set();
  for (const op of ops) {
    // p3 is the database: 0 main (1 would be temp, where SQLite keeps no entity's rows).
    if ((op.opcode === "OpenRead" || op.opcode === "OpenWrite" || op.opcode === "ReopenIdx") && op.p3 === 0) {
      const table = schema.tableOfRootPage(op.p2);
      if (table !== undefined) cursorTable.set(op.p1, table);
    }
    if (op.opcode === "OpenEphemeral" && /^k\(/.test(String(op.p4 ?? ""))) lists.add(op.p1);
  }
  const inDriven = new Set();
  for (let i = 0; i < ops.length; i++) {
    const start = ops[i];
    if (!((start.opcode === "Rewind" || start.opcode === "Last") && lists.has(start.p1))) continue;
    const end = ops.findIndex((op, j) => j > i && (op.opcode === "Next" || op.opcode === "Prev") && op.p1 === start.p1 && op.p2 > start.addr);
    if (end < 0) continue;
    for (let j = i + 1; j < end; j++) {
      if (SEEKS.has(ops[j].opcode) && cursorTable.has(ops[j].p1)) {
        inDriven.add(cursorTable.get(ops[j].p1));
        break;
      }
    }
  }
  return { tables: new Set(cursorTable.values()), inDriven };
}

function rows(db, sql) {
  const stmt = db.prepare(sql);
  try {
    const out = [];
    while (stmt.step()) out.push(stmt.get());
    return out;
  } finally {
    stmt.free();
  }
}

const quoteLiteral = (s) => `'${String(s).replace(/'/g, "''")}'`;
