// Data model of the simulated ERP used by erplink's tests (see README.md).
// Names follow SAP's public APIs. Sample rows: db/csv/ (the repo ignores data/).
namespace erp;

entity BusinessPartner {
  key BusinessPartner          : String(10);
      BusinessPartnerCategory  : String(1);
      BusinessPartnerFullName  : String(81);
      FirstName                : String(40);
      LastName                 : String(40);
      OrganizationBPName1      : String(40);
      SearchTerm1              : String(20);
      BusinessPartnerIsBlocked : Boolean default false;
      CreationDate             : Date;
      // Not in SAP's API: a free text for producing large payloads in tests.
      Notes                    : LargeString;
      to_Address               : Composition of many BusinessPartnerAddress
                                   on to_Address.BusinessPartner = BusinessPartner;
}

entity BusinessPartnerAddress {
  key BusinessPartner    : String(10);
  key AddressID          : String(10);
      StreetName         : String(60);
      HouseNumber        : String(10);
      PostalCode         : String(10);
      CityName           : String(40);
      Country            : String(3);
      to_BusinessPartner : Association to one BusinessPartner
                             on to_BusinessPartner.BusinessPartner = BusinessPartner;
}

entity Currency {
  key Currency     : String(5);
      CurrencyName : String(40);
      Decimals     : Integer;
}

entity SalesOrder {
  key SalesOrder              : String(10);
      SalesOrderType          : String(4);
      SoldToParty             : String(10);
      PurchaseOrderByCustomer : String(35);
      SalesOrderDate          : Date;
      TransactionCurrency     : String(5);
      TotalNetAmount          : Decimal(16, 3);
      to_Item                 : Composition of many SalesOrderItem
                                  on to_Item.SalesOrder = SalesOrder;
}

entity SalesOrderItem {
  key SalesOrder            : String(10);
  key SalesOrderItem        : String(6);
      Material              : String(40);
      SalesOrderItemText    : String(40);
      RequestedQuantity     : Decimal(15, 3);
      RequestedQuantityUnit : String(3);
      NetAmount             : Decimal(16, 3);
      to_SalesOrder         : Association to one SalesOrder
                                on to_SalesOrder.SalesOrder = SalesOrder;
}
