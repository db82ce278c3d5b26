// A model whose child key is an association, as every CAP composition of an
// aspect makes one: the shape in which a `$batch` reference, which CAP
// resolves by writing the referenced entity's stored key into the URL, could
// reach another entity set. Used by erplink's regression tests.
namespace notes;

entity Folders {
  key ID    : String(200);
      name  : String(100);
      owner : Association to Secrets;
      notes : Composition of many Notes on notes.folder = $self;
      label : Association to Labels;
      // An Edm.Time (SAP's LastChangeTime): CAP's V2 adapter converts time'…' literals.
      changedAt : Time;
}

entity Notes {
  key folder : Association to Folders;
  key ID     : String(200);
      text   : String(100);
      // The same name as the folder's, to another entity set: inside a lambda
      // over a folder's notes CAP reads a path without the variable from the note.
      label  : Association to Secrets;
}

entity Secrets {
  key ID    : String(200);
      value : String(100);
}

entity Labels {
  key ID    : String(200);
      value : String(100);
}
