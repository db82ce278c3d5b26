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
@requires: 'authenticated-user'
service API_NOTES {
  entity Folders as projection on notes.Folders;
  entity Notes   as projection on notes.Notes;
  entity Secrets as projection on notes.Secrets;
  entity Labels  as projection on notes.Labels;
}
