/** The Logs screen (not built yet: its data is available through the admin API). */
export function Logs() {
  return (
    <section>
      <h1>Logs</h1>
      <p>This screen is not built yet. Its data is available through the admin API (see /api-reference).</p>
    </section>
  );
}
