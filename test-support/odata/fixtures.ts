/**
 * Sample `$metadata` documents for the OData authorizer tests: a small sales
 * service in V4 (EDMX 4.0) and in V2 (EDMX 1.0). Not a suite: uvu loads it
 * and finds no tests. (It belongs in test-support/; it lives here only
 * because this change may not touch that folder.)
 *
 * V4 (namespace Sales, alias S):
 * - SalesOrders (SalesOrder, key ID): Items (contained collection of
 *   SalesOrderItem, which has Product -> Products), Customer -> Customers,
 *   ShipTo (complex Address, whose CountryInfo -> Countries), Approver
 *   (no binding), Tags (collection of strings); derived type SpecialOrder
 *   with Escalation -> Employees.
 * - Customers (Customer, key ID): Orders -> SalesOrders, Address.
 * - Products (key ID; Product is a media entity type, HasStream="true"):
 *   Category -> Categories; Categories: Parent, Children
 *   (both -> Categories); Countries; Employees; PriceConditions (composite
 *   key OrderID, Type); Extensions (an open type); singleton Me (Customer).
 * - Bound functions GetTotal (on SalesOrder) and TopOrders (on the
 *   collection), bound action Approve (on SalesOrder), function import
 *   Search, action import ResetAll.
 */
export const V4_METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:Reference Uri="https://example.com/vocabularies/Core.xml">
    <edmx:Include Namespace="Org.OData.Core.V1" Alias="Core"/>
  </edmx:Reference>
  <edmx:DataServices>
    <Schema Namespace="Sales" Alias="S" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <ComplexType Name="Address">
        <Property Name="City" Type="Edm.String"/>
        <Property Name="Country" Type="Edm.String"/>
        <NavigationProperty Name="CountryInfo" Type="S.Country"/>
      </ComplexType>
      <EntityType Name="SalesOrder">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Note" Type="Edm.String"/>
        <Property Name="Amount" Type="Edm.Decimal"/>
        <Property Name="ShipTo" Type="S.Address"/>
        <Property Name="Tags" Type="Collection(Edm.String)"/>
        <NavigationProperty Name="Items" Type="Collection(Sales.SalesOrderItem)" ContainsTarget="true"/>
        <NavigationProperty Name="Customer" Type="Sales.Customer" Partner="Orders"/>
        <NavigationProperty Name="Approver" Type="Sales.Employee"/>
        <Annotation Term="Core.Description" String="A sales order &amp; its items"/>
      </EntityType>
      <EntityType Name="SpecialOrder" BaseType="S.SalesOrder">
        <Property Name="Priority" Type="Edm.Int32"/>
        <NavigationProperty Name="Escalation" Type="Sales.Employee"/>
      </EntityType>
      <EntityType Name="SalesOrderItem">
        <Key><PropertyRef Name="ItemNo"/></Key>
        <Property Name="ItemNo" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Quantity" Type="Edm.Decimal"/>
        <NavigationProperty Name="Product" Type="Sales.Product"/>
      </EntityType>
      <EntityType Name="Customer">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
        <Property Name="Address" Type="Sales.Address"/>
        <NavigationProperty Name="Orders" Type="Collection(Sales.SalesOrder)" Partner="Customer"/>
      </EntityType>
      <EntityType Name="Product" HasStream="true">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
        <Property Name="Price" Type="Edm.Decimal"/>
        <NavigationProperty Name="Category" Type="Sales.Category"/>
      </EntityType>
      <EntityType Name="Category">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
        <NavigationProperty Name="Parent" Type="Sales.Category"/>
        <NavigationProperty Name="Children" Type="Collection(Sales.Category)"/>
      </EntityType>
      <EntityType Name="Country">
        <Key><PropertyRef Name="Code"/></Key>
        <Property Name="Code" Type="Edm.String" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
      </EntityType>
      <EntityType Name="Employee">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <EntityType Name="PriceCondition">
        <Key><PropertyRef Name="OrderID"/><PropertyRef Name="Type"/></Key>
        <Property Name="OrderID" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Type" Type="Edm.String" Nullable="false"/>
        <Property Name="Value" Type="Edm.Decimal"/>
      </EntityType>
      <EntityType Name="Extension" OpenType="true">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
      </EntityType>
      <Function Name="GetTotal" IsBound="true">
        <Parameter Name="order" Type="Sales.SalesOrder"/>
        <ReturnType Type="Edm.Decimal"/>
      </Function>
      <Function Name="TopOrders" IsBound="true">
        <Parameter Name="orders" Type="Collection(Sales.SalesOrder)"/>
        <Parameter Name="count" Type="Edm.Int32"/>
        <ReturnType Type="Collection(Sales.SalesOrder)"/>
      </Function>
      <Action Name="Approve" IsBound="true">
        <Parameter Name="order" Type="S.SalesOrder"/>
      </Action>
      <Function Name="Search">
        <Parameter Name="text" Type="Edm.String"/>
        <ReturnType Type="Collection(Sales.Product)"/>
      </Function>
      <Action Name="ResetAll"/>
      <EntityContainer Name="Container">
        <EntitySet Name="SalesOrders" EntityType="Sales.SalesOrder">
          <NavigationPropertyBinding Path="Customer" Target="Customers"/>
          <NavigationPropertyBinding Path="Items/Product" Target="Products"/>
          <NavigationPropertyBinding Path="ShipTo/CountryInfo" Target="Countries"/>
          <NavigationPropertyBinding Path="Sales.SpecialOrder/Escalation" Target="Sales.Container/Employees"/>
        </EntitySet>
        <EntitySet Name="Customers" EntityType="Sales.Customer">
          <NavigationPropertyBinding Path="Orders" Target="SalesOrders"/>
          <NavigationPropertyBinding Path="Address/CountryInfo" Target="Countries"/>
        </EntitySet>
        <EntitySet Name="Products" EntityType="Sales.Product">
          <NavigationPropertyBinding Path="Category" Target="Categories"/>
        </EntitySet>
        <EntitySet Name="Categories" EntityType="Sales.Category">
          <NavigationPropertyBinding Path="Parent" Target="Categories"/>
          <NavigationPropertyBinding Path="Children" Target="Categories"/>
        </EntitySet>
        <EntitySet Name="Countries" EntityType="Sales.Country"/>
        <EntitySet Name="Employees" EntityType="Sales.Employee"/>
        <EntitySet Name="PriceConditions" EntityType="Sales.PriceCondition"/>
        <EntitySet Name="Extensions" EntityType="Sales.Extension"/>
        <Singleton Name="Me" Type="Sales.Customer">
          <NavigationPropertyBinding Path="Orders" Target="SalesOrders"/>
        </Singleton>
        <FunctionImport Name="Search" Function="Sales.Search" EntitySet="Products"/>
        <ActionImport Name="ResetAll" Action="Sales.ResetAll"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;

/**
 * V2 (SAP Gateway style, namespace ZSALES_SRV):
 * - SalesOrderSet (key SalesOrderID): ToItems (* -> SalesOrderItemSet),
 *   ToCustomer (1 -> CustomerSet).
 * - SalesOrderItemSet (composite key SalesOrderID, ItemPosition): ToProduct
 *   (1 -> ProductSet).
 * - CustomerSet (key CustomerID): ToOrders (* -> SalesOrderSet), Address
 *   (complex), ToContacts (association without an association set).
 * - ProductSet, ContactSet; function import ReleaseOrder.
 * - AttachmentSet (Attachment, key AttachmentID): a media entity type
 *   (`m:HasStream="true"`, as in SAP's API_CV_ATTACHMENT_SRV), also reached
 *   from SalesOrder by ToAttachments (* -> AttachmentSet).
 */
export const V2_METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"
    xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
    xmlns:sap="http://www.sap.com/Protocols/SAPData">
  <edmx:DataServices m:DataServiceVersion="2.0">
    <Schema Namespace="ZSALES_SRV" xml:lang="en" sap:schema-version="1"
        xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
      <EntityType Name="SalesOrder" sap:content-version="1">
        <Key><PropertyRef Name="SalesOrderID"/></Key>
        <Property Name="SalesOrderID" Type="Edm.String" Nullable="false" MaxLength="10" sap:label="Order"/>
        <Property Name="Note" Type="Edm.String"/>
        <Property Name="Amount" Type="Edm.Decimal" Precision="16" Scale="3"/>
        <NavigationProperty Name="ToItems" Relationship="ZSALES_SRV.Order_Items" FromRole="FromRole_Order_Items" ToRole="ToRole_Order_Items"/>
        <NavigationProperty Name="ToCustomer" Relationship="ZSALES_SRV.Order_Customer" FromRole="Order" ToRole="Customer"/>
        <NavigationProperty Name="ToAttachments" Relationship="ZSALES_SRV.Order_Attachments" FromRole="Order" ToRole="Attachment"/>
      </EntityType>
      <EntityType Name="SalesOrderItem">
        <Key><PropertyRef Name="SalesOrderID"/><PropertyRef Name="ItemPosition"/></Key>
        <Property Name="SalesOrderID" Type="Edm.String" Nullable="false"/>
        <Property Name="ItemPosition" Type="Edm.String" Nullable="false"/>
        <Property Name="Quantity" Type="Edm.Decimal"/>
        <NavigationProperty Name="ToProduct" Relationship="ZSALES_SRV.Item_Product" FromRole="Item" ToRole="Product"/>
      </EntityType>
      <EntityType Name="Customer">
        <Key><PropertyRef Name="CustomerID"/></Key>
        <Property Name="CustomerID" Type="Edm.String" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
        <Property Name="Address" Type="ZSALES_SRV.Address" Nullable="false"/>
        <NavigationProperty Name="ToOrders" Relationship="ZSALES_SRV.Order_Customer" FromRole="Customer" ToRole="Order"/>
        <NavigationProperty Name="ToContacts" Relationship="ZSALES_SRV.Customer_Contacts" FromRole="Customer" ToRole="Contact"/>
      </EntityType>
      <EntityType Name="Product">
        <Key><PropertyRef Name="ProductID"/></Key>
        <Property Name="ProductID" Type="Edm.String" Nullable="false"/>
        <Property Name="Name" Type="Edm.String"/>
      </EntityType>
      <EntityType Name="Contact">
        <Key><PropertyRef Name="ContactID"/></Key>
        <Property Name="ContactID" Type="Edm.String" Nullable="false"/>
      </EntityType>
      <EntityType Name="Attachment" m:HasStream="true">
        <Key><PropertyRef Name="AttachmentID"/></Key>
        <Property Name="AttachmentID" Type="Edm.String" Nullable="false"/>
        <Property Name="FileName" Type="Edm.String"/>
        <Property Name="MimeType" Type="Edm.String"/>
      </EntityType>
      <ComplexType Name="Address">
        <Property Name="City" Type="Edm.String"/>
        <Property Name="Street" Type="Edm.String"/>
      </ComplexType>
      <Association Name="Order_Items" sap:content-version="1">
        <End Type="ZSALES_SRV.SalesOrder" Multiplicity="1" Role="FromRole_Order_Items"/>
        <End Type="ZSALES_SRV.SalesOrderItem" Multiplicity="*" Role="ToRole_Order_Items"/>
      </Association>
      <Association Name="Order_Customer">
        <End Type="ZSALES_SRV.SalesOrder" Multiplicity="*" Role="Order"/>
        <End Type="ZSALES_SRV.Customer" Multiplicity="1" Role="Customer"/>
      </Association>
      <Association Name="Item_Product">
        <End Type="ZSALES_SRV.SalesOrderItem" Multiplicity="*" Role="Item"/>
        <End Type="ZSALES_SRV.Product" Multiplicity="0..1" Role="Product"/>
      </Association>
      <Association Name="Order_Attachments">
        <End Type="ZSALES_SRV.SalesOrder" Multiplicity="1" Role="Order"/>
        <End Type="ZSALES_SRV.Attachment" Multiplicity="*" Role="Attachment"/>
      </Association>
      <Association Name="Customer_Contacts">
        <End Type="ZSALES_SRV.Customer" Multiplicity="1" Role="Customer"/>
        <End Type="ZSALES_SRV.Contact" Multiplicity="*" Role="Contact"/>
      </Association>
      <EntityContainer Name="ZSALES_SRV_Entities" m:IsDefaultEntityContainer="true">
        <EntitySet Name="SalesOrderSet" EntityType="ZSALES_SRV.SalesOrder" sap:pageable="true"/>
        <EntitySet Name="SalesOrderItemSet" EntityType="ZSALES_SRV.SalesOrderItem"/>
        <EntitySet Name="CustomerSet" EntityType="ZSALES_SRV.Customer"/>
        <EntitySet Name="ProductSet" EntityType="ZSALES_SRV.Product"/>
        <EntitySet Name="ContactSet" EntityType="ZSALES_SRV.Contact"/>
        <EntitySet Name="AttachmentSet" EntityType="ZSALES_SRV.Attachment"/>
        <AssociationSet Name="Order_Items_Set" Association="ZSALES_SRV.Order_Items">
          <End EntitySet="SalesOrderSet" Role="FromRole_Order_Items"/>
          <End EntitySet="SalesOrderItemSet" Role="ToRole_Order_Items"/>
        </AssociationSet>
        <AssociationSet Name="Order_Customer_Set" Association="ZSALES_SRV.Order_Customer">
          <End EntitySet="SalesOrderSet" Role="Order"/>
          <End EntitySet="CustomerSet" Role="Customer"/>
        </AssociationSet>
        <AssociationSet Name="Item_Product_Set" Association="ZSALES_SRV.Item_Product">
          <End EntitySet="SalesOrderItemSet" Role="Item"/>
          <End EntitySet="ProductSet" Role="Product"/>
        </AssociationSet>
        <AssociationSet Name="Order_Attachments_Set" Association="ZSALES_SRV.Order_Attachments">
          <End EntitySet="SalesOrderSet" Role="Order"/>
          <End EntitySet="AttachmentSet" Role="Attachment"/>
        </AssociationSet>
        <FunctionImport Name="ReleaseOrder" ReturnType="ZSALES_SRV.SalesOrder" EntitySet="SalesOrderSet" m:HttpMethod="POST">
          <Parameter Name="SalesOrderID" Type="Edm.String" Mode="In"/>
        </FunctionImport>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;

/**
 * {@link V4_METADATA} plus what only request bodies need: Shipments
 * (Shipment, key ID) with a complex collection Stops and a complex Origin
 * (both Address), whose CountryInfo -> Countries; and PostalAddress, a
 * complex type derived from Address with PostOffice -> Employees (bound for
 * Stops only); media entity types derived from others: ProductSheet from
 * Product (a media entity type, so ProductSheet is one too) and
 * ScannedShipment from Shipment (which is not; HasStream on the derived
 * type only). A separate document, so that the request tests keep theirs.
 */
export const V4_BODY_METADATA = V4_METADATA.replace(
  `      <EntityType Name="SalesOrder">`,
  `      <ComplexType Name="PostalAddress" BaseType="S.Address">
        <Property Name="Box" Type="Edm.String"/>
        <NavigationProperty Name="PostOffice" Type="Sales.Employee"/>
      </ComplexType>
      <EntityType Name="Shipment">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <Property Name="Stops" Type="Collection(Sales.Address)"/>
        <Property Name="Origin" Type="Sales.Address"/>
      </EntityType>
      <EntityType Name="ScannedShipment" BaseType="Sales.Shipment" HasStream="true">
        <Property Name="Pages" Type="Edm.Int32"/>
      </EntityType>
      <EntityType Name="ProductSheet" BaseType="Sales.Product">
        <Property Name="Language" Type="Edm.String"/>
      </EntityType>
      <EntityType Name="SalesOrder">`,
).replace(
  `        <Singleton Name="Me" Type="Sales.Customer">`,
  `        <EntitySet Name="Shipments" EntityType="Sales.Shipment">
          <NavigationPropertyBinding Path="Stops/CountryInfo" Target="Countries"/>
          <NavigationPropertyBinding Path="Origin/CountryInfo" Target="Countries"/>
          <NavigationPropertyBinding Path="Stops/Sales.PostalAddress/PostOffice" Target="Employees"/>
        </EntitySet>
        <Singleton Name="Me" Type="Sales.Customer">`,
);

/**
 * Deletes that cascade, as CAP declares compositions: Folders -> notes
 * (`OnDelete Action="Cascade"`) -> attachments (cascade), Notes -> folder
 * (no cascade), Folders -> owner (no cascade), Tags -> children (cascade,
 * into Tags itself: a cycle). V4, and the same in V2, where the cascade is
 * on the association end of the entity whose deletion cascades.
 */
export const CASCADE_V4_METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="N" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Folder">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <NavigationProperty Name="notes" Type="Collection(N.Note)" Partner="folder"><OnDelete Action="Cascade"/></NavigationProperty>
        <NavigationProperty Name="owner" Type="N.Owner"/>
      </EntityType>
      <EntityType Name="Note">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <NavigationProperty Name="folder" Type="N.Folder" Partner="notes"/>
        <NavigationProperty Name="attachments" Type="Collection(N.Attachment)"><OnDelete Action="Cascade"/></NavigationProperty>
      </EntityType>
      <EntityType Name="Attachment">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
      </EntityType>
      <EntityType Name="Owner">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
      </EntityType>
      <EntityType Name="Tag">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <NavigationProperty Name="children" Type="Collection(N.Tag)"><OnDelete Action="Cascade"/></NavigationProperty>
      </EntityType>
      <EntityContainer Name="C">
        <EntitySet Name="Folders" EntityType="N.Folder">
          <NavigationPropertyBinding Path="notes" Target="Notes"/>
          <NavigationPropertyBinding Path="owner" Target="Owners"/>
        </EntitySet>
        <EntitySet Name="Notes" EntityType="N.Note">
          <NavigationPropertyBinding Path="folder" Target="Folders"/>
          <NavigationPropertyBinding Path="attachments" Target="Attachments"/>
        </EntitySet>
        <EntitySet Name="Attachments" EntityType="N.Attachment"/>
        <EntitySet Name="Owners" EntityType="N.Owner"/>
        <EntitySet Name="Tags" EntityType="N.Tag">
          <NavigationPropertyBinding Path="children" Target="Tags"/>
        </EntitySet>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;

export const CASCADE_V2_METADATA = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx">
  <edmx:DataServices xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" m:DataServiceVersion="2.0">
    <Schema Namespace="N" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
      <EntityType Name="Folder">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <NavigationProperty Name="notes" Relationship="N.Note_folder" FromRole="Folders" ToRole="Notes"/>
        <NavigationProperty Name="owner" Relationship="N.Folder_owner" FromRole="Folders" ToRole="Owners"/>
      </EntityType>
      <EntityType Name="Note">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
        <NavigationProperty Name="folder" Relationship="N.Note_folder" FromRole="Notes" ToRole="Folders"/>
      </EntityType>
      <EntityType Name="Owner">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.String" Nullable="false"/>
      </EntityType>
      <Association Name="Note_folder">
        <End Role="Notes" Type="N.Note" Multiplicity="*"/>
        <End Role="Folders" Type="N.Folder" Multiplicity="0..1"><OnDelete Action="Cascade"/></End>
      </Association>
      <Association Name="Folder_owner">
        <End Role="Folders" Type="N.Folder" Multiplicity="*"/>
        <End Role="Owners" Type="N.Owner" Multiplicity="0..1"/>
      </Association>
      <EntityContainer Name="C" m:IsDefaultEntityContainer="true">
        <EntitySet Name="Folders" EntityType="N.Folder"/>
        <EntitySet Name="Notes" EntityType="N.Note"/>
        <EntitySet Name="Owners" EntityType="N.Owner"/>
        <AssociationSet Name="Note_folder" Association="N.Note_folder">
          <End Role="Notes" EntitySet="Notes"/>
          <End Role="Folders" EntitySet="Folders"/>
        </AssociationSet>
        <AssociationSet Name="Folder_owner" Association="N.Folder_owner">
          <End Role="Folders" EntitySet="Folders"/>
          <End Role="Owners" EntitySet="Owners"/>
        </AssociationSet>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;
