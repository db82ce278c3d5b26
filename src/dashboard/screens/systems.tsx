/** Systems: list, create, delete (a system with instances cannot be deleted: the 409 is explained), and a system's instances. */
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type System } from "../api.js";
import { Instances } from "./instances.js";
import { withRequestId } from "./sign-in.js";

export function Systems() {
  const [systems, setSystems] = useState<readonly System[] | undefined>(undefined);
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [busy, setBusy] = useState(false);
  /** The system whose instances are shown. */
  const [selected, setSelected] = useState<System | undefined>(undefined);

  const load = async () => {
    try {
      const all: System[] = [];
      let token = "";
      do {
        const page = await api.listSystems(token);
        all.push(...page.data);
        token = page.nextPageToken ?? "";
      } while (token !== "");
      setSystems(all);
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    }
  };
  useEffect(() => {
    void load();
  }, []);
  // `?system=sys_…` (a link to a system) opens its instances.
  const wanted = new URLSearchParams(location.search).get("system");
  useEffect(() => {
    if (wanted !== null && selected === undefined) setSelected(systems?.find((s) => s.id === wanted));
  }, [systems, wanted]);

  const create = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    setStatus("");
    try {
      const { data } = await api.createSystem({ name: name.trim(), description: description.trim() });
      setName("");
      setDescription("");
      await load();
      setStatus(`System ${data.name} created.`);
    } catch (err) {
      if (err instanceof ApiError) setError(withRequestId(err));
    } finally {
      setBusy(false);
    }
  };

  const remove = async (system: System) => {
    if (!confirm(`Delete system ${system.name}? This cannot be undone.`)) return;
    setError("");
    setStatus("");
    try {
      await api.deleteSystem(system.id, system.etag);
      if (selected?.id === system.id) setSelected(undefined);
      await load();
      setStatus(`System ${system.name} deleted.`);
    } catch (err) {
      if (!(err instanceof ApiError)) return;
      setError(
        err.status === 409
          ? `${system.name} still has instances: delete its instances first, then the system. (${withRequestId(err)})`
          : err.status === 412
            ? `${system.name} was changed since this list was loaded: it was not deleted. Look at it again, then delete it if you still mean to.`
            : withRequestId(err),
      );
      // A refused delete of a changed system: the list shows it as it is now.
      if (err.status === 412) await load();
    }
  };

  return (
    <section aria-labelledby="systems-title">
      <h1 id="systems-title">Systems</h1>
      <p>A system is one ERP landscape (for example a production S/4HANA); its instances are the OData endpoints erplink forwards to.</p>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="status" role="status">
        {status}
      </p>
      <form class="inline-form" onSubmit={create}>
        <h2>New system</h2>
        <label for="system-name">Name</label>
        <input id="system-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required aria-describedby="system-name-help" />
        <small id="system-name-help">Unique, up to 100 characters, e.g. s4-prod.</small>
        <label for="system-description">Description</label>
        <input id="system-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create system"}
        </button>
      </form>
      {systems === undefined ? (
        error === "" && <p aria-busy="true">Loading systems…</p>
      ) : systems.length === 0 ? (
        <p>No systems yet: create the first one above.</p>
      ) : (
        <table>
          <caption>{systems.length === 1 ? "1 system" : `${systems.length} systems`}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {systems.map((s) => (
              <tr key={s.id}>
                <th scope="row">{s.name}</th>
                <td>{s.description}</td>
                <td>
                  <time dateTime={s.created_at}>{new Date(s.created_at).toLocaleString()}</time>
                </td>
                <td class="systems-actions">
                  <button
                    type="button"
                    class="secondary"
                    onClick={() => setSelected(s)}
                    aria-label={`Instances of ${s.name}`}
                    aria-pressed={selected?.id === s.id}
                  >
                    Instances
                  </button>
                  <button type="button" class="danger" onClick={() => remove(s)} aria-label={`Delete system ${s.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {selected !== undefined && systems?.some((s) => s.id === selected.id) === true && <Instances system={selected} />}
    </section>
  );
}
