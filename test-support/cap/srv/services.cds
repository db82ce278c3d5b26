// The OData services of the simulated ERP; every entity set is writable.
using erp from '../db/schema';
using notes from '../db/notes';

@requires: 'authenticated-user'
service API_BUSINESS_PARTNER {
  entity A_BusinessPartner        as projection on erp.BusinessPartner;
  entity A_BusinessPartnerAddress as projection on erp.BusinessPartnerAddress;
  entity A_Currency               as projection on erp.Currency;
}

@requires: 'authenticated-user'
service API_SALES_ORDER {
  entity A_SalesOrder     as projection on erp.SalesOrder;
  entity A_SalesOrderItem as projection on erp.SalesOrderItem;
}

// Folders, their notes (keyed by their folder: an association) and secrets.
// The operations (implemented in services.js) reach entity sets other than
// their binding set, so that tests can show an operation's effects are not
// those of the set it is bound to (see README.md for their URLs).
@requires: 'authenticated-user'
service API_NOTES {
  entity Folders as projection on notes.Folders;
  entity Notes   as projection on notes.Notes actions {
    // The note's secret (its `label`, a Secrets row), read by key.
    function secretOf() returns Secrets;
    // Overwrites the value of the note's secret; returns the secret.
    action   setSecret(value : String) returns Secrets;
    // The value of the label of the note's folder (a Labels row), read by key.
    function labelText() returns String;
  };
  entity Secrets as projection on notes.Secrets;
  entity Labels  as projection on notes.Labels;

  // How many secrets there are (reads all of Secrets).
  function countSecrets() returns Integer;
  // Deletes every label; returns how many.
  action   purgeLabels() returns Integer;
  // One folder, read by key.
  function folderOf(ID : String) returns Folders;
}
