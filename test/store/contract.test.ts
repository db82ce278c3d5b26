/**
 * The store contract on the store tests run on: embedded in memory, or a
 * fresh MongoDB database per test when ERPLINK_TEST_MONGODB_URL is set.
 */
import { storeContract } from "../../test-support/store-contract.js";
import { openTestStore, testMongoUrl } from "../../test-support/world.js";

storeContract(testMongoUrl() === undefined ? "embedded (memory)" : "mongodb", openTestStore);
