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
}

entity Notes {
  key folder : Association to Folders;
  key ID     : String(200);
      text   : String(100);
}

entity Secrets {
  key ID    : String(200);
      value : String(100);
}
