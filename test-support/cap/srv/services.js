// Implementation of the operations of services.cds. CAP loads this file
// because it sits next to services.cds (same name); it applies to every
// service of that file and takes the export named after a service as that
// service's implementation: here only API_NOTES, the others stay generic.
// ESM, since the repository's package.json says "type": "module".
//
// The handlers run their queries on the database (cds.db, in the request's
// transaction), not through the service, so what they read and write is
// exactly the SQL below: the effects the tests expect of each operation.
import cds from "@sap/cds";

const { SELECT, UPDATE, DELETE } = cds.ql;

/** @param {import("@sap/cds").ApplicationService} srv */
export function API_NOTES(srv) {
  const { Notes, Secrets, Labels, Folders } = srv.entities;

  /** The note the bound operation was called on (404 if there is none). */
  const noteOf = async (req) => {
    const note = await SELECT.one.from(req.subject);
    if (!note) return req.reject(404, `Note not found`);
    return note;
  };

  srv.on("secretOf", Notes, async (req) => {
    const note = await noteOf(req);
    if (note.label_ID == null) return null;
    return SELECT.one.from(Secrets, note.label_ID);
  });

  srv.on("setSecret", Notes, async (req) => {
    const note = await noteOf(req);
    if (note.label_ID == null) return null;
    await UPDATE(Secrets, note.label_ID).with({ value: req.data.value });
    return SELECT.one.from(Secrets, note.label_ID);
  });

  srv.on("labelText", Notes, async (req) => {
    const note = await noteOf(req);
    const folder = await SELECT.one.from(Folders, note.folder_ID).columns("label_ID");
    if (folder?.label_ID == null) return null;
    const label = await SELECT.one.from(Labels, folder.label_ID).columns("value");
    return label?.value ?? null;
  });

  srv.on("countSecrets", async () => {
    const row = await SELECT.one.from(Secrets).columns("count(1) as n");
    return row.n;
  });

  srv.on("purgeLabels", async () => DELETE.from(Labels));

  srv.on("folderOf", async (req) => SELECT.one.from(Folders, req.data.ID));
}
